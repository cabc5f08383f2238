// Renders one assistant turn (turn.js state) into the DOM, in place, so open <details> stay open while it streams.
import { h, clear } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown, escapeHtml } from "./markdown.js";
import { safeUrl } from "./safe-url.js";
import { layout } from "./turn.js";
import { findReference, docLink } from "./citations.js";
import { showCitation, isRestoringFocus } from "./popover.js";
import { openDebug } from "./debug.js";

function markerHtml(c, idx) {
  return `<button type="button" class="cite" data-cite="${idx}" data-n="${c.n}" aria-label="${escapeHtml(t("cite.document"))} ${c.n}" aria-haspopup="dialog">${c.n}</button>`;
}

export function prettyJson(v) {
  if (typeof v === "string") return v;
  try { return JSON.stringify(v, null, 2); } catch { return String(v); }
}


export class AnswerView {
  constructor({ onApproval } = {}) {
    this.onApproval = onApproval;
    this.turn = null;
    this.citations = [];
    this.stepEls = new Map();
    this.stepsBox = h("div", { class: "steps-list" });
    this.stepsCount = h("span");
    this.steps = h("details", { class: "steps", hidden: true }, h("summary", null, this.stepsCount), this.stepsBox);
    this.answer = h("div", { class: "answer md", "aria-live": "polite" });
    this.statusLine = h("div", { class: "turn-status" });
    this.refsCount = h("span");
    this.refsList = h("ol", { class: "refs-list" });
    this.refs = h("details", { class: "refs", hidden: true }, h("summary", null, this.refsCount), this.refsList);
    this.debugBtn = h("button", { type: "button", class: "btn ghost small", onclick: () => openDebug(this.turn, this.debugBtn) }, t("answer.debug"));
    this.copyBtn = h("button", { type: "button", class: "btn ghost small", onclick: () => navigator.clipboard?.writeText(layout(this.turn).answer) }, t("answer.copy"));
    this.footer = h("div", { class: "msg-footer" }, this.debugBtn, this.copyBtn);
    this.el = h("article", { class: "msg assistant", "aria-label": "answer" }, this.steps, this.answer, this.statusLine, this.refs, this.footer);
    this.answer.addEventListener("click", (e) => this.citeEvent(e, true));
    this.answer.addEventListener("mouseover", (e) => this.citeEvent(e, false));
    this.answer.addEventListener("focusin", (e) => { if (!isRestoringFocus()) this.citeEvent(e, false); });
    this.pending = false;
  }

  citeEvent(e, pinned) {
    const btn = e.target.closest?.("button.cite");
    if (!btn) return;
    if (pinned) e.preventDefault();
    const c = this.citations[+btn.dataset.cite];
    if (!c) return;
    showCitation(btn, c, findReference(c, this.turn.references), { pinned });
  }

  update(turn) {
    this.turn = turn;
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.render(); });
  }

  renderNow(turn) { this.turn = turn; this.render(); }

  render() {
    const turn = this.turn;
    const { steps, answer } = layout(turn);
    this.el.dataset.status = turn.status;
    if (turn.messageId) this.el.dataset.messageId = turn.messageId;
    // step tree
    this.steps.hidden = steps.length === 0;
    this.stepsCount.textContent = t("answer.steps", { n: steps.length });
    const seen = new Set();
    steps.forEach((s, i) => {
      const key = `${s.kind}:${s.key}`;
      seen.add(key);
      let el = this.stepEls.get(key);
      if (!el) { el = this.makeStep(s); this.stepEls.set(key, el); }
      this.fillStep(el, s);
      if (this.stepsBox.children[i] !== el) this.stepsBox.insertBefore(el, this.stepsBox.children[i] || null);
    });
    for (const [key, el] of this.stepEls) if (!seen.has(key)) { el.remove(); this.stepEls.delete(key); }
    // answer
    const streaming = turn.status === "streaming";
    const { html, tags, citations } = renderMarkdown(answer, { streaming, marker: markerHtml });
    this.citations = tags;
    this.answer.innerHTML = html || (streaming ? '<span class="typing" aria-label="…"><i></i><i></i><i></i></span>' : "");
    this.answer.classList.toggle("streaming", streaming);
    // status
    const notes = [];
    if (turn.status === "stopped") notes.push(t("chat.stopped"));
    if (turn.status === "error") notes.push(t("answer.error", { msg: turn.error }));
    if (turn.isFallback) notes.push(t("answer.fallback"));
    this.statusLine.textContent = notes.join(" ");
    this.statusLine.className = `turn-status ${turn.status}`;
    // references
    this.renderRefs(turn, citations);
    this.footer.hidden = streaming;
  }

  renderRefs(turn, citations) {
    const refs = turn.references || [];
    this.refs.hidden = refs.length === 0;
    this.refsCount.textContent = t("answer.references", { n: refs.length });
    const numberOf = new Map();
    for (const c of citations) {
      const r = findReference(c, refs);
      if (r && !numberOf.has(r.id)) numberOf.set(r.id, c.n);
    }
    clear(this.refsList);
    for (const r of refs) {
      const n = numberOf.get(r.id);
      const link = docLink(r);
      const isWeb = r.chunk_type === "web_search" || r.match_type === 7;
      const href = isWeb ? safeUrl(r.knowledge_source || r.metadata?.url) : link; // a web result's URL is foreign text
      this.refsList.append(h("li", { class: n ? "cited" : "" },
        h("div", { class: "ref-head" },
          n ? h("span", { class: "ref-n", title: t("cite.document") }, n) : null,
          href ? h("a", { href, ...(isWeb ? { target: "_blank", rel: "noopener noreferrer" } : { "data-link": "" }) }, r.knowledge_title || r.knowledge_filename || r.id)
               : h("span", null, r.knowledge_title || r.id),
          h("span", { class: "score" }, `${t("cite.score")} ${Number(r.score || 0).toFixed(3)}`)),
        h("div", { class: "ref-snippet" }, (r.content || "").slice(0, 240))));
    }
  }

  makeStep(s) {
    if (s.kind === "preamble") return h("div", { class: "step preamble md" });
    if (s.kind === "approval") return h("div", { class: "step approval", role: "group" });
    const summary = h("summary");
    const body = h("div", { class: "step-body" });
    return h("details", { class: `step ${s.kind}` }, summary, body);
  }

  fillStep(el, s) {
    if (s.kind === "preamble") { el.innerHTML = renderMarkdown(s.content, { marker: () => "" }).html; return; }
    if (s.kind === "thinking") {
      el.querySelector("summary").textContent = `${t("answer.thinking")}${s.done ? "" : " …"}`;
      el.querySelector(".step-body").innerHTML = renderMarkdown(s.content).html;
      return;
    }
    if (s.kind === "tool") {
      const r = s.result;
      const mark = !r ? "…" : r.success ? "✓" : "✗";
      const dur = r && r.durationMs != null ? ` · ${r.durationMs} ms` : "";
      el.querySelector("summary").textContent = `${t("answer.tool", { name: s.name })} ${mark}${dur}`;
      el.classList.toggle("failed", !!r && !r.success);
      const body = el.querySelector(".step-body");
      clear(body).append(
        h("div", { class: "label" }, t("answer.args")), h("pre", { class: "args" }, prettyJson(s.args)),
        ...(r ? [h("div", { class: "label" }, t("answer.result")),
             h("pre", { class: "result" }, r.error ? r.error : prettyJson(r.output || (Object.keys(r.data || {}).length ? r.data : "")))] : []));
      return;
    }
    if (s.kind === "approval") {
      clear(el).append(
        h("p", null, t("answer.approval", { name: s.toolName })),
        h("pre", { class: "args" }, prettyJson(s.args)));
      if (s.status === "pending") {
        el.append(h("div", { class: "row" },
          h("button", { type: "button", class: "btn primary small", onclick: () => this.onApproval?.(s, true, this) }, t("answer.approve")),
          h("button", { type: "button", class: "btn ghost small", onclick: () => this.onApproval?.(s, false, this) }, t("answer.deny"))));
      } else {
        el.append(h("p", { class: `approval-${s.status}` }, t(s.status === "approved" ? "answer.approved" : "answer.denied")));
      }
    }
  }
}
