// The per-answer debug drawer: stage timings (stream "debug" frames or the message's debug field) and the
// retrieved chunks with their per-path scores (SearchResult.scores: vector, keyword, fused, rerank).
import { h, clear } from "./dom.js";
import { t } from "./i18n.js";

let drawer = null;
let returnFocus = null;

function ensure() {
  if (drawer) return drawer;
  drawer = h("aside", { class: "drawer", id: "debug-drawer", role: "dialog", "aria-modal": "false", "aria-labelledby": "debug-title", hidden: true, tabindex: "-1" });
  document.body.append(drawer);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !drawer.hidden) closeDebug(); });
  return drawer;
}

export function closeDebug() {
  if (!drawer || drawer.hidden) return;
  drawer.hidden = true;
  returnFocus?.focus?.();
}

const fmt = (v) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(4)) : v == null ? "–" : String(v));

const msFmt = (v) => (Number.isFinite(Number(v)) ? Number(v).toFixed(1) : "–");

function notesOf(tm) {
  return Object.entries(tm).filter(([k]) => !["stage", "ms", "kept", "count"].includes(k))
    .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ");
}

function keptOf(tm) {
  if (tm.kept != null) return typeof tm.kept === "object" ? JSON.stringify(tm.kept) : tm.kept;
  if (tm.count != null) return tm.count;
  return "";
}

export function openDebug(turn, from) {
  ensure();
  returnFocus = from;
  clear(drawer);
  const close = h("button", { type: "button", class: "btn ghost small", onclick: closeDebug, "aria-label": t("close") }, "✕");
  drawer.append(h("header", { class: "drawer-head" }, h("h2", { id: "debug-title" }, t("debug.title")), close));
  const timings = turn?.debug?.timings || [];
  const refs = turn?.references || [];
  if (!timings.length && !refs.length) drawer.append(h("p", { class: "muted" }, t("debug.none")));
  if (timings.length) {
    const total = timings.reduce((a, x) => a + (Number(x.ms) || 0), 0);
    drawer.append(h("h3", null, t("debug.timings")),
      h("table", { class: "grid timings" },
        h("thead", null, h("tr", null, h("th", null, t("debug.stage")), h("th", null, t("debug.ms")), h("th", null, t("debug.kept")), h("th", null, ""))),
        h("tbody", null, timings.map((x) => h("tr", null,
          h("td", null, x.stage), h("td", { class: "num" }, msFmt(x.ms)), h("td", null, String(keptOf(x)), notesOf(x) ? h("div", { class: "muted small" }, notesOf(x)) : null),
          h("td", { class: "bar-cell" }, h("span", { class: "bar", style: `width:${total ? Math.max(2, (Number(x.ms) / total) * 100) : 0}%` }))))),
        h("tfoot", null, h("tr", null, h("td", null, t("debug.total")), h("td", { class: "num" }, msFmt(total)), h("td"), h("td")))));
  }
  if (refs.length) {
    drawer.append(h("h3", null, t("debug.chunks")), scoresTable(refs));
  }
  const extra = turn?.debug?.extra || {};
  if (Object.keys(extra).length) drawer.append(h("details", null, h("summary", null, "raw"), h("pre", null, JSON.stringify(extra, null, 2))));
  drawer.hidden = false;
  drawer.focus();
}

export function scoresTable(results) {
  const cols = ["vector", "keyword", "fused", "rerank"];
  return h("div", { class: "table-wrap" }, h("table", { class: "grid scores" },
    h("thead", null, h("tr", null, h("th", null, "#"), h("th", null, t("debug.doc")),
      cols.map((c) => h("th", { class: "num" }, t(`debug.${c}`))), h("th", { class: "num" }, t("debug.score")), h("th", null, t("debug.match")))),
    h("tbody", null, results.map((r, i) => h("tr", null,
      h("td", null, String(i + 1)),
      h("td", null, h("div", { class: "doc-cell" }, r.knowledge_title || r.knowledge_filename || r.knowledge_id),
        h("div", { class: "snippet" }, (r.content || "").slice(0, 160))),
      cols.map((c) => h("td", { class: "num", "data-score": c }, fmt(r.scores?.[c]))),
      h("td", { class: "num" }, fmt(r.score)),
      h("td", null, matchName(r.match_type)))))));
}

const MATCH = ["vector", "keyword", "nearby", "history", "parent", "relation", "graph", "web", "direct", "data"];
export function matchName(m) { return MATCH[m] ?? String(m ?? ""); }
