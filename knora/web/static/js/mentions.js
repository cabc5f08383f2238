// @-mentions in the composer: typing "@" opens a listbox of knowledge bases and documents; ArrowUp/Down move,
// Enter or Tab picks, Esc closes. Picking removes the "@query" text and adds the item to the chat's scope.
import { h, clear } from "./dom.js";
import { t } from "./i18n.js";

const cache = new Map();

export class MentionMenu {
  static async cached(key, load) {
    if (!cache.has(key)) cache.set(key, load().catch((e) => { cache.delete(key); throw e; }));
    return cache.get(key);
  }
  static clearCache() { cache.clear(); }

  constructor(input, { source, onPick }) {
    this.input = input;
    this.source = source;
    this.onPick = onPick;
    this.items = [];
    this.active = 0;
    this.start = -1;
    this.el = h("ul", { class: "mention-menu", id: "mention-menu", role: "listbox", hidden: true, "aria-label": "@" });
    input.addEventListener("input", () => this.refresh());
    input.addEventListener("keydown", (e) => this.keydown(e));
    input.addEventListener("blur", () => setTimeout(() => this.close(), 150));
  }

  isOpen() { return !this.el.hidden; }

  close() {
    this.el.hidden = true;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  query() {
    const v = this.input.value.slice(0, this.input.selectionStart ?? this.input.value.length);
    const m = v.match(/(^|\s)@([^\s@]*)$/);
    if (!m) return null;
    this.start = v.length - m[2].length - 1;
    return m[2].toLowerCase();
  }

  async refresh() {
    const q = this.query();
    if (q === null) { this.close(); return; }
    const all = await this.source();
    if (this.query() !== q) return; // typed on meanwhile
    this.items = all.filter((it) => it.name.toLowerCase().includes(q) || (it.kb_name || "").toLowerCase().includes(q)).slice(0, 30);
    this.active = 0;
    this.render();
  }

  render() {
    clear(this.el);
    if (!this.items.length) this.el.append(h("li", { class: "muted", role: "option", "aria-disabled": "true" }, t("chat.mention.none")));
    this.items.forEach((it, i) => {
      this.el.append(h("li", {
        id: `mention-${i}`, role: "option", class: `mention ${it.type}${i === this.active ? " active" : ""}`, "aria-selected": i === this.active ? "true" : "false",
        onmousedown: (e) => { e.preventDefault(); this.pick(i); },
      }, h("span", { class: "kind" }, it.type === "kb" ? t("chat.mention.kb") : t("chat.mention.doc")), h("span", { class: "name" }, it.name),
        it.kb_name ? h("span", { class: "muted small" }, ` · ${it.kb_name}`) : null));
    });
    this.el.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    if (this.items.length) this.input.setAttribute("aria-activedescendant", `mention-${this.active}`);
  }

  keydown(e) {
    if (!this.isOpen()) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!this.items.length) return;
      this.active = (this.active + (e.key === "ArrowDown" ? 1 : -1) + this.items.length) % this.items.length;
      this.render();
    } else if ((e.key === "Enter" || e.key === "Tab") && this.items.length) {
      e.preventDefault();
      e.stopImmediatePropagation();
      this.pick(this.active);
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopImmediatePropagation();
      this.close();
    }
  }

  pick(i) {
    const it = this.items[i];
    if (!it) return;
    const v = this.input.value;
    const caret = this.input.selectionStart ?? v.length;
    this.input.value = v.slice(0, this.start) + v.slice(caret);
    this.input.setSelectionRange(this.start, this.start);
    this.close();
    this.onPick(it);
    this.input.focus();
  }
}
