// The citation popover: one element for the page, opened by hover, keyboard focus or tap on a marker.
// Esc or a click elsewhere closes it; focus returns to the marker it came from.
import { h, clear } from "./dom.js";
import { t } from "./i18n.js";
import { docLink, chunkLocation } from "./citations.js";
import { chunkText, lastSentence, locateQuote, quoteWindow } from "./cited.js";
import { safeUrl } from "./safe-url.js";

let pop = null;
let anchor = null;
let pinned = false;
let hideTimer = null;
let restoring = false; // focus going back to the marker after Esc must not reopen the popover

export function isRestoringFocus() { return restoring; }

function ensure() {
  if (pop) return pop;
  pop = h("div", { class: "popover", role: "dialog", id: "cite-popover", hidden: true, tabindex: "-1" });
  pop.addEventListener("mouseenter", () => clearTimeout(hideTimer));
  pop.addEventListener("mouseleave", () => scheduleHide());
  document.body.append(pop);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !pop.hidden) { e.stopPropagation(); hideCitation(true); }
  }, true);
  document.addEventListener("pointerdown", (e) => {
    if (!pop.hidden && !pop.contains(e.target) && !e.target.closest?.("button.cite")) hideCitation(false);
  });
  window.addEventListener("resize", () => hideCitation(false));
  // the thread scrolls inside its own box: keep the popover next to its marker
  document.addEventListener("scroll", () => { if (!pop.hidden && anchor) position(anchor); }, true);
  return pop;
}

function scheduleHide() {
  clearTimeout(hideTimer);
  if (pinned) return;
  hideTimer = setTimeout(() => hideCitation(false), 250);
}

export function hideCitation(restoreFocus) {
  if (!pop || pop.hidden) return;
  pop.hidden = true;
  anchor?.setAttribute("aria-expanded", "false");
  if (restoreFocus && anchor) {
    restoring = true;
    try { anchor.focus({ preventScroll: true }); } finally { restoring = false; }
  }
  anchor = null;
  pinned = false;
}

export function showCitation(marker, c, ref, opts = {}) {
  ensure();
  clearTimeout(hideTimer);
  if (anchor && anchor !== marker) anchor.setAttribute("aria-expanded", "false");
  anchor = marker;
  pinned = pinned || !!opts.pinned;
  marker.setAttribute("aria-expanded", "true");
  marker.setAttribute("aria-controls", "cite-popover");
  if (!marker.dataset.hoverBound) {
    marker.dataset.hoverBound = "1";
    marker.addEventListener("mouseleave", scheduleHide);
    marker.addEventListener("blur", () => { if (!pop.contains(document.activeElement)) scheduleHide(); });
  }
  clear(pop);
  if (c.kind === "web") {
    pop.append(
      h("div", { class: "pop-kind" }, `[${c.n}] ${t("cite.web")}`),
      h("div", { class: "pop-title" }, c.title || c.url),
      ref?.content ? h("div", { class: "pop-text" }, ref.content.slice(0, 600)) : null,
      safeUrl(c.url) ? h("a", { class: "pop-link", href: safeUrl(c.url), target: "_blank", rel: "noopener noreferrer" }, c.url)
        : h("span", { class: "pop-link" }, c.url)); // a URL the model wrote: a link only when safe
  } else {
    const name = ref?.knowledge_title || ref?.knowledge_filename || c.doc || t("cite.document");
    const where = c.page || chunkLocation(ref?.chunk_metadata);
    const title = where ? `${name} · ${where}` : name;
    const cited = ref ? chunkText(ref, c.chunk_id) : null;
    const link = ref ? docLink(ref, c.chunk_id, cited.chunkIndex) : c.kb_id ? `/kb/${encodeURIComponent(c.kb_id)}` : null;
    pop.append(
      h("div", { class: "pop-kind" }, `[${c.n}] ${t("cite.document")}`),
      h("div", { class: "pop-title" }, title),
      ref ? h("div", { class: "pop-score" }, `${t("cite.score")}: ${Number(ref.score || 0).toFixed(3)}`) : null,
      ref ? quoted(cited.text, textBefore(marker)) : h("div", { class: "pop-text muted" }, t("cite.unknown")),
      link ? h("a", { class: "pop-link", href: link, "data-link": "" }, t("cite.open")) : null);
  }
  pop.hidden = false;
  position(marker);
}

// The cited chunk's text with the sentence the marker follows highlighted (scrolled into view when long).
function quoted(text, before) {
  const [head, quote, tail] = quoteWindow(text, locateQuote(text, lastSentence(before)));
  const mark = quote ? h("mark", { class: "pop-quote" }, quote) : null;
  const box = h("div", { class: "pop-text" }, head, mark, tail);
  if (mark) requestAnimationFrame(() => { box.scrollTop = Math.max(0, mark.offsetTop - box.offsetTop - 24); });
  return box;
}

// The answer text before a marker in its paragraph (other markers left out).
function textBefore(marker) {
  const block = marker.closest("p, li, td, th, blockquote, .answer") || marker.parentElement;
  if (!block) return "";
  const range = document.createRange();
  range.setStart(block, 0);
  range.setEndBefore(marker);
  const part = range.cloneContents();
  part.querySelectorAll("button.cite").forEach((b) => b.replaceWith(" "));
  return part.textContent || "";
}

function position(marker) {
  const r = marker.getBoundingClientRect();
  const vw = document.documentElement.clientWidth, vh = window.innerHeight;
  pop.style.maxWidth = `${Math.min(420, vw - 16)}px`;
  const pw = pop.offsetWidth, ph = pop.offsetHeight;
  let left = Math.min(Math.max(8, r.left + r.width / 2 - pw / 2), vw - pw - 8);
  let top = r.bottom + 6;
  if (top + ph > vh - 8 && r.top - ph - 6 > 8) top = r.top - ph - 6;
  pop.style.left = `${left + window.scrollX}px`;
  pop.style.top = `${top + window.scrollY}px`;
}
