// Knowledge pages: KB list/create, a KB's documents (upload files/folders with progress, URL, manual entry, live
// parse status), FAQ entries, the search playground (scores by path), KB settings, and the chunk viewer/editor.
import { h, clear, toast, confirmDialog, formatBytes, formatDuration, formatTime } from "./dom.js";
import { t } from "./i18n.js";
import { api, request, upload, imageURL } from "./api.js";
import { navigate } from "./router.js";
import { scoresTable } from "./debug.js";
import { invalidateKbs } from "./chat.js";
import { chunkLocation } from "./citations.js";

const ACTIVE = new Set(["pending", "processing", "finalizing"]);
const POLL_MS = 1500;
const fail = (e) => toast(t("error.generic", { msg: e.message }), "error");

export async function renderKnowledge(root, params) {
  if (!params.kb) return renderKbList(root);
  let kbId = params.kb;
  if (params.doc) {
    if (kbId === "_") {
      try { kbId = (await api("GET", `/knowledge/${params.doc}`)).knowledge_base_id; } catch (e) { fail(e); return; }
    }
    return renderChunks(root, kbId, params.doc);
  }
  return renderKb(root, kbId, params.tab || "docs");
}

// ------------------------------------------------------------------------------------------------ KB list
async function renderKbList(root) {
  const list = h("div", { class: "cards" }, h("p", { class: "muted" }, t("loading")));
  const name = h("input", { name: "name", required: true, id: "kb-name" });
  const desc = h("input", { name: "description", id: "kb-desc" });
  const type = h("select", { name: "type", id: "kb-type" }, h("option", { value: "document" }, t("kb.type.document")), h("option", { value: "faq" }, t("kb.type.faq")));
  const form = h("form", { class: "card form-grid", id: "kb-create", onsubmit: async (e) => {
    e.preventDefault();
    try {
      const kb = await api("POST", "/knowledge-bases", { name: name.value.trim(), description: desc.value.trim(), type: type.value });
      invalidateKbs();
      navigate(`/kb/${kb.id}`);
    } catch (err) { fail(err); }
  } }, h("h2", null, t("kb.new")),
    h("label", { class: "field" }, h("span", null, t("kb.name")), name),
    h("label", { class: "field" }, h("span", null, t("kb.description")), desc),
    h("label", { class: "field" }, h("span", null, t("kb.type")), type),
    h("button", { type: "submit", class: "btn primary" }, t("create")));
  clear(root).append(h("div", { class: "page" }, h("h1", null, t("kb.list")), list, form));
  try {
    const kbs = (await api("GET", "/knowledge-bases")) || [];
    clear(list);
    if (!kbs.length) list.append(h("p", { class: "muted" }, t("kb.empty")));
    for (const kb of kbs) {
      list.append(h("a", { class: "card kb-card", href: `/kb/${kb.id}`, "data-link": "" },
        h("h3", null, kb.name), h("p", { class: "muted" }, kb.description || ""),
        h("p", { class: "small" }, t("kb.docs", { n: kb.knowledge_count ?? 0 }), " · ", t("kb.chunks", { n: kb.chunk_count ?? 0 }),
          kb.type === "faq" ? ` · ${t("kb.type.faq")}` : "")));
    }
  } catch (e) { clear(list).append(h("p", { class: "error" }, e.message)); }
}

// ------------------------------------------------------------------------------------------------ one KB
async function renderKb(root, kbId, tab) {
  let kb;
  try { kb = await api("GET", `/knowledge-bases/${kbId}`); } catch (e) { clear(root).append(h("p", { class: "pad error" }, e.message)); return; }
  const tabs = [["docs", "kb.tab.docs"], ...(kb.type === "faq" ? [["faq", "kb.tab.faq"]] : []), ["search", "kb.tab.search"], ["settings", "kb.tab.settings"]];
  const body = h("div", { class: "tab-body" });
  clear(root).append(h("div", { class: "page" },
    h("a", { href: "/kb", "data-link": "", class: "back" }, "← ", t("kb.back")),
    h("h1", null, kb.name), kb.description ? h("p", { class: "muted" }, kb.description) : null,
    h("nav", { class: "tabs", "aria-label": kb.name }, tabs.map(([id, key]) =>
      h("a", { href: `/kb/${kb.id}/${id}`, "data-link": "", class: id === tab ? "active" : "", "aria-current": id === tab ? "page" : null }, t(key)))),
    body));
  if (tab === "faq") return renderFaq(body, kb);
  if (tab === "search") return renderSearch(body, kb);
  if (tab === "settings") return renderKbSettings(body, kb);
  return renderDocs(body, kb);
}

// ------------------------------------------------------------------------------------------------ documents
function renderDocs(root, kb) {
  const files = h("input", { type: "file", multiple: true, id: "upload-files", class: "sr-only", onchange: (e) => { uploadAll(kb, [...e.target.files]); e.target.value = ""; } });
  const folder = h("input", { type: "file", multiple: true, webkitdirectory: true, id: "upload-folder", class: "sr-only", onchange: (e) => { uploadAll(kb, [...e.target.files]); e.target.value = ""; } });
  const queue = h("ul", { class: "upload-queue", "aria-live": "polite" });
  const table = h("div", { class: "doc-table" });
  const drop = h("div", { class: "dropzone", tabindex: "0", role: "button", "aria-label": t("doc.upload"),
    onclick: () => files.click(), onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); files.click(); } } }, t("doc.drop"));
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); uploadAll(kb, [...e.dataTransfer.files]); });

  const urlIn = h("input", { type: "url", id: "doc-url", placeholder: "https://…", required: true });
  const urlForm = h("form", { class: "inline-form", onsubmit: async (e) => {
    e.preventDefault();
    try { await api("POST", `/knowledge-bases/${kb.id}/knowledge/url`, { url: urlIn.value.trim() }); urlIn.value = ""; refresh(); }
    catch (err) { fail(err); }
  } }, h("label", { class: "sr-only", for: "doc-url" }, t("doc.url")), urlIn, h("button", { type: "submit", class: "btn" }, t("doc.url")));
  const mTitle = h("input", { id: "manual-title", required: true });
  const mBody = h("textarea", { id: "manual-content", rows: 5, required: true });
  const manual = h("details", { class: "card" }, h("summary", null, t("doc.manual")),
    h("form", { class: "form-grid", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("POST", `/knowledge-bases/${kb.id}/knowledge/manual`, { title: mTitle.value.trim(), content: mBody.value, status: "publish" });
        mTitle.value = ""; mBody.value = ""; manual.open = false; refresh();
      } catch (err) { fail(err); }
    } }, h("label", { class: "field" }, h("span", null, t("doc.title")), mTitle),
      h("label", { class: "field" }, h("span", null, t("doc.content")), mBody),
      h("button", { type: "submit", class: "btn primary" }, t("save"))));

  clear(root).append(
    h("div", { class: "toolbar" },
      h("label", { for: "upload-files", class: "btn primary", tabindex: "0", role: "button", onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); files.click(); } } }, "⬆ ", t("doc.upload")), files,
      h("label", { for: "upload-folder", class: "btn", tabindex: "0", role: "button", onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); folder.click(); } } }, "▤ ", t("doc.uploadFolder")), folder,
      urlForm),
    drop, queue, manual, table);

  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    if (!table.isConnected && timer !== null) return;
    let env;
    try { env = await request("GET", `/knowledge-bases/${kb.id}/knowledge`, undefined, { query: { page: 1, page_size: 200 } }); }
    catch (e) { clear(table).append(h("p", { class: "error" }, e.message)); return; }
    const docs = env.data || [];
    drawDocs(table, docs, refresh);
    if (docs.some((d) => ACTIVE.has(d.parse_status))) timer = setTimeout(() => { if (table.isConnected) refresh(); }, POLL_MS);
    else timer = 0;
  }

  async function uploadAll(kb, list) {
    let done = 0;
    const run = async (file) => {
      const name = file.webkitRelativePath || file.name;
      const bar = h("progress", { max: 1, value: 0 });
      const row = h("li", null, h("span", { class: "name" }, t("doc.uploading", { name })), bar);
      queue.append(row);
      const fd = new FormData();
      fd.append("file", file, file.name);
      fd.append("fileName", name);
      try {
        await upload(`/knowledge-bases/${kb.id}/knowledge/file`, fd, (p) => { bar.value = p; });
        bar.value = 1; row.classList.add("ok"); row.firstChild.textContent = `✓ ${name}`; done++;
      } catch (e) {
        row.classList.add("failed");
        bar.remove();
        row.firstChild.textContent = `✗ ${name}`;
        row.append(h("span", { class: "error" }, e.status === 409 ? t("doc.duplicate", { name }) : e.message));
      }
      refresh();
    };
    const pending = [...list];
    const workers = Array.from({ length: Math.min(2, pending.length) }, async () => { while (pending.length) await run(pending.shift()); });
    await Promise.all(workers);
    if (done) { toast(t("doc.uploaded", { n: done })); invalidateKbs(); }
    setTimeout(() => { for (const li of [...queue.children]) if (li.classList.contains("ok")) li.remove(); }, 3000);
  }
  refresh();
}

function statusBadge(d) {
  const s = d.parse_status || "pending";
  return h("span", { class: `badge ${s}`, title: d.error_message || "" }, t(`doc.status.${s}`));
}

// A large document's job says how far it is (metadata.progress, written by the server every few seconds).
function progressNote(d) {
  const p = d.metadata?.progress;
  if (d.parse_status !== "processing" || !p || !p.total) return null;
  const n = (x) => Number(x).toLocaleString();
  const left = p.stage === "embedding" ? formatDuration(p.eta_seconds) : "";
  return h("div", { class: "small muted doc-progress" },
    h("progress", { max: p.total, value: p.done }),
    " ", t(`doc.progress.${p.stage === "indexing" ? "indexing" : "embedding"}`, { done: n(p.done), total: n(p.total) }),
    left ? ` · ${t("doc.progress.left", { time: left })}` : "");
}

// A partial parse names what it left out (metadata.parse_skipped): a scanned page with OCR off, the 101st
// attachment, slides past the limit …
function skippedNote(d) {
  const skipped = Array.isArray(d.metadata?.parse_skipped) ? d.metadata.parse_skipped : [];
  if (!skipped.length || d.parse_status !== "completed") return null;
  return h("details", { class: "small warn skipped-note" },
    h("summary", null, t("doc.skipped", { n: skipped.length })),
    h("ul", null, skipped.map((s) => h("li", null, s))));
}

function drawDocs(table, docs, refresh) {
  clear(table);
  if (!docs.length) { table.append(h("p", { class: "muted" }, t("doc.empty"))); return; }
  table.append(h("div", { class: "table-wrap" }, h("table", { class: "grid docs", id: "doc-list" },
    h("thead", null, h("tr", null, h("th", null, t("doc.title")), h("th", null, t("doc.status")), h("th", { class: "num" }, t("doc.size")), h("th", null, t("doc.updated")), h("th", null, ""))),
    h("tbody", null, docs.map((d) => h("tr", { dataset: { docId: d.id, status: d.parse_status } },
      h("td", null, h("a", { href: `/kb/${d.knowledge_base_id}/doc/${d.id}`, "data-link": "" }, d.title || d.file_name || d.source || d.id),
        d.parse_status === "failed" && d.error_message ? h("div", { class: "error small fail-reason" }, d.error_message) : null,
        skippedNote(d)),
      h("td", null, statusBadge(d), progressNote(d)),
      h("td", { class: "num" }, formatBytes(d.file_size)),
      h("td", null, formatTime(d.updated_at)),
      h("td", { class: "actions" },
        h("button", { type: "button", class: "btn ghost small", onclick: async () => {
          try { await api("POST", `/knowledge/${d.id}/reparse`); refresh(); } catch (e) { fail(e); } } }, t("doc.reparse")),
        h("button", { type: "button", class: "btn ghost small danger", "aria-label": `${t("delete")} ${d.title || d.file_name}`, onclick: async () => {
          if (!(await confirmDialog(t("confirm.delete", { name: d.title || d.file_name }), { okLabel: t("delete"), cancelLabel: t("cancel") }))) return;
          try { await api("DELETE", `/knowledge/${d.id}`); invalidateKbs(); refresh(); } catch (e) { fail(e); } } }, t("delete")))))))));
}

// ------------------------------------------------------------------------------------------------ chunks
async function renderChunks(root, kbId, docId) {
  let doc = null;
  try { doc = await api("GET", `/knowledge/${docId}`); } catch (e) { fail(e); }
  const name = doc?.title || doc?.file_name || docId;
  const list = h("ol", { class: "chunks", id: "chunk-list" });
  const pager = h("div", { class: "row" });
  clear(root).append(h("div", { class: "page" },
    h("a", { href: `/kb/${kbId}`, "data-link": "", class: "back" }, "← ", t("kb.tab.docs")),
    h("h1", null, t("chunk.title", { name })),
    doc ? h("p", { class: "muted" }, statusBadge(doc), " ", doc.source || "", doc.error_message ? h("span", { class: "error" }, ` ${doc.error_message}`) : null) : null,
    list, pager));
  const size = 20;
  // ?chunk=<id>[&index=<n>] (a citation's "Open document"): open the page holding that chunk, scroll to it
  const wanted = new URLSearchParams(location.search);
  let target = wanted.get("chunk");
  const index = Number.parseInt(wanted.get("index") ?? "", 10);
  let page = target && index >= 0 ? Math.floor(index / size) + 1 : 1;
  const tried = new Set();
  async function load() {
    let env;
    try { env = await request("GET", `/chunks/${docId}`, undefined, { query: { page, page_size: size } }); } catch (e) { fail(e); return; }
    const chunks = env.data || [];
    const total = env.total ?? chunks.length;
    if (target && !chunks.some((c) => c.id === target)) { // not on the page its index suggested: look on the others
      tried.add(page);
      const pages = Math.max(1, Math.ceil(total / size));
      const next = Array.from({ length: pages }, (_, i) => i + 1).find((p) => !tried.has(p));
      if (next) { page = next; return load(); }
      target = null; // not in this document (any more): its first page
      if (page !== 1) { page = 1; return load(); }
    }
    clear(list);
    if (!chunks.length) list.append(h("li", { class: "muted" }, t("chunk.empty")));
    for (const c of chunks) list.append(chunkItem(docId, c));
    if (target) showTarget(list, target);
    target = null;
    clear(pager);
    if (page > 1) pager.append(h("button", { type: "button", class: "btn ghost small", onclick: () => { page--; load(); } }, "←"));
    pager.append(h("span", { class: "muted small" }, ` ${page} / ${Math.max(1, Math.ceil(total / size))} `));
    if (page * size < total) pager.append(h("button", { type: "button", class: "btn ghost small", onclick: () => { page++; load(); } }, "→"));
  }
  load();
}

function showTarget(list, id) {
  const li = [...list.children].find((el) => el.dataset.chunkId === id);
  if (!li) return;
  li.classList.add("chunk-target");
  li.setAttribute("tabindex", "-1");
  li.scrollIntoView({ block: "center" });
  li.focus({ preventScroll: true });
}

function chunkImages(c) {
  let infos = [];
  try { infos = c.image_info ? JSON.parse(c.image_info) : []; } catch { infos = []; }
  if (!Array.isArray(infos) || !infos.length) return null;
  const box = h("div", { class: "chunk-images" });
  for (const info of infos) {
    const caption = info.caption || info.ocr_text || "";
    const img = h("img", { class: "chunk-image", alt: caption || t("chunk.image"), loading: "lazy" });
    const url = info.url || info.original_url;
    if (url && url.startsWith("/")) imageURL(url).then((u) => { img.src = u; }).catch(() => img.replaceWith(h("span", { class: "muted small" }, t("chunk.imageMissing"))));
    box.append(h("figure", null, img, caption ? h("figcaption", { class: "small muted" }, caption) : null));
  }
  return box;
}

function chunkItem(docId, c) {
  const text = h("div", { class: "chunk-text" }, c.content);
  const enabled = h("input", { type: "checkbox", checked: c.is_enabled !== false, onchange: () => save({ is_enabled: enabled.checked }) });
  const where = chunkLocation(c.metadata);
  const li = h("li", { class: "chunk card", dataset: { chunkId: c.id } },
    h("div", { class: "row" }, h("strong", null, t("chunk.index", { n: c.chunk_index })), h("span", { class: "muted small" }, c.chunk_type || ""),
      where ? h("span", { class: "badge small chunk-location" }, where) : null,
      h("span", { class: "spacer" }), h("label", { class: "inline small" }, enabled, t("chunk.enabled")),
      h("button", { type: "button", class: "btn ghost small", onclick: edit }, t("edit"))),
    text, chunkImages(c));
  async function save(patch) {
    try {
      const updated = await api("PUT", `/chunks/${docId}/${c.id}`, { content: c.content, chunk_index: c.chunk_index, is_enabled: c.is_enabled !== false, ...patch });
      Object.assign(c, patch, updated && updated.id ? updated : {});
      text.textContent = c.content;
      toast(t("chunk.saved"));
    } catch (e) { fail(e); }
  }
  function edit() {
    const ta = h("textarea", { rows: 8, class: "chunk-edit", "aria-label": t("doc.content") }, c.content);
    const form = h("form", { class: "form-grid", onsubmit: async (e) => { e.preventDefault(); await save({ content: ta.value }); form.replaceWith(text); } },
      ta, h("div", { class: "row end" },
        h("button", { type: "button", class: "btn ghost", onclick: () => form.replaceWith(text) }, t("cancel")),
        h("button", { type: "submit", class: "btn primary" }, t("save"))));
    ta.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.preventDefault(); form.replaceWith(text); } });
    text.replaceWith(form);
    ta.focus();
  }
  return li;
}

// ------------------------------------------------------------------------------------------------ FAQ
async function renderFaq(root, kb) {
  const list = h("div", { class: "faq-list" });
  const q = h("input", { id: "faq-q", required: true });
  const sim = h("textarea", { id: "faq-sim", rows: 2 });
  const ans = h("textarea", { id: "faq-ans", rows: 3, required: true });
  const lines = (s) => s.split("\n").map((x) => x.trim()).filter(Boolean);
  const form = h("form", { class: "card form-grid", onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api("POST", `/knowledge-bases/${kb.id}/faq/entry`, { standard_question: q.value.trim(), similar_questions: lines(sim.value), answers: lines(ans.value), is_enabled: true });
      q.value = sim.value = ans.value = ""; load();
    } catch (err) { fail(err); }
  } }, h("h3", null, t("faq.add")),
    h("label", { class: "field" }, h("span", null, t("faq.question")), q),
    h("label", { class: "field" }, h("span", null, t("faq.similar")), sim),
    h("label", { class: "field" }, h("span", null, t("faq.answers")), ans),
    h("button", { type: "submit", class: "btn primary" }, t("create")));
  clear(root).append(form, list);
  async function load() {
    let entries = [];
    try {
      const data = await api("GET", `/knowledge-bases/${kb.id}/faq/entries`, undefined, { query: { page: 1, page_size: 100 } });
      entries = Array.isArray(data) ? data : data?.data || [];
    } catch (e) { clear(list).append(h("p", { class: "error" }, e.message)); return; }
    clear(list);
    if (!entries.length) list.append(h("p", { class: "muted" }, t("faq.empty")));
    for (const en of entries) list.append(faqItem(kb, en, load, lines));
  }
  load();
}

function faqItem(kb, en, reload, lines) {
  const view = h("div", null,
    h("h4", null, en.standard_question),
    (en.similar_questions || []).length ? h("p", { class: "muted small" }, en.similar_questions.join(" · ")) : null,
    h("ul", null, (en.answers || []).map((a) => h("li", null, a))));
  const card = h("div", { class: "card faq" }, view, h("div", { class: "row end" },
    h("button", { type: "button", class: "btn ghost small", onclick: edit }, t("edit")),
    h("button", { type: "button", class: "btn ghost small danger", onclick: async () => {
      if (!(await confirmDialog(t("confirm.delete", { name: en.standard_question }), { okLabel: t("delete"), cancelLabel: t("cancel") }))) return;
      try { await api("DELETE", `/knowledge-bases/${kb.id}/faq/entries`, { ids: [en.id] }); reload(); } catch (e) { fail(e); } } }, t("delete"))));
  function edit() {
    const q = h("input", { value: en.standard_question });
    const sim = h("textarea", { rows: 2 }, (en.similar_questions || []).join("\n"));
    const ans = h("textarea", { rows: 3 }, (en.answers || []).join("\n"));
    const form = h("form", { class: "form-grid", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("PUT", `/knowledge-bases/${kb.id}/faq/entries/${en.id}`, { ...en, standard_question: q.value.trim(), similar_questions: lines(sim.value), answers: lines(ans.value) });
        reload();
      } catch (err) { fail(err); }
    } }, h("label", { class: "field" }, h("span", null, t("faq.question")), q),
      h("label", { class: "field" }, h("span", null, t("faq.similar")), sim),
      h("label", { class: "field" }, h("span", null, t("faq.answers")), ans),
      h("div", { class: "row end" }, h("button", { type: "button", class: "btn ghost", onclick: () => form.replaceWith(view) }, t("cancel")),
        h("button", { type: "submit", class: "btn primary" }, t("save"))));
    view.replaceWith(form);
    q.focus();
  }
  return card;
}

// ------------------------------------------------------------------------------------------------ search
function renderSearch(root, kb) {
  const q = h("input", { id: "search-q", required: true, type: "search" });
  const vt = h("input", { id: "search-vt", type: "number", step: "0.05", min: "0", max: "1", value: kb.retrieval_config?.vector_threshold ?? 0.2 });
  const kt = h("input", { id: "search-kt", type: "number", step: "0.05", min: "0", max: "1", value: kb.retrieval_config?.keyword_threshold ?? 0.3 });
  const mc = h("input", { id: "search-mc", type: "number", min: "1", max: "200", value: 10 });
  const noV = h("input", { type: "checkbox" }), noK = h("input", { type: "checkbox" });
  const out = h("div", { class: "search-results", id: "search-results" });
  const form = h("form", { class: "card form-grid search-form", onsubmit: async (e) => {
    e.preventDefault();
    clear(out).append(h("p", { class: "muted" }, t("loading")));
    try {
      const rows = (await api("POST", `/knowledge-bases/${kb.id}/hybrid-search`, {
        query_text: q.value, vector_threshold: Number(vt.value), keyword_threshold: Number(kt.value), match_count: Number(mc.value),
        disable_vector_match: noV.checked, disable_keywords_match: noK.checked })) || [];
      clear(out).append(rows.length ? scoresTable(rows) : h("p", { class: "muted" }, t("search.empty")));
    } catch (err) { clear(out).append(h("p", { class: "error" }, err.message)); }
  } },
    h("label", { class: "field wide" }, h("span", null, t("search.query")), q),
    h("label", { class: "field" }, h("span", null, t("search.vectorThreshold")), vt),
    h("label", { class: "field" }, h("span", null, t("search.keywordThreshold")), kt),
    h("label", { class: "field" }, h("span", null, t("search.matchCount")), mc),
    h("label", { class: "inline" }, noV, t("search.noVector")), h("label", { class: "inline" }, noK, t("search.noKeyword")),
    h("button", { type: "submit", class: "btn primary" }, t("search.run")));
  clear(root).append(form, out);
  q.focus();
}

// ------------------------------------------------------------------------------------------------ settings
async function renderKbSettings(root, kb) {
  let models = [];
  try { models = (await api("GET", "/models")) || []; } catch { models = []; }
  const cc = kb.chunking_config || {};
  const name = h("input", { id: "kbs-name", value: kb.name, required: true });
  const desc = h("input", { id: "kbs-desc", value: kb.description || "" });
  const size = h("input", { id: "kbs-size", type: "number", min: "50", value: cc.chunk_size ?? 512 });
  const overlap = h("input", { id: "kbs-overlap", type: "number", min: "0", value: cc.chunk_overlap ?? 80 });
  // a knowledge base may name a model the list does not show (an older built-in id, a model since deleted):
  // it is shown by its id rather than as an empty choice
  const sel = (type, current) => {
    const own = models.filter((m) => m.type === type);
    const missing = current && !own.some((m) => m.id === current) ? [h("option", { value: current, selected: true }, current)] : [];
    return h("select", null, h("option", { value: "" }, t("kb.defaultModel")), missing,
      own.map((m) => h("option", { value: m.id, selected: m.id === current }, m.display_name || m.name)));
  };
  const emb = sel("Embedding", kb.embedding_model_id);
  const sum = sel("KnowledgeQA", kb.summary_model_id);
  const form = h("form", { class: "card form-grid", onsubmit: async (e) => {
    e.preventDefault();
    const chunking = { ...cc, chunk_size: Number(size.value), chunk_overlap: Number(overlap.value) };
    try {
      await api("PUT", `/knowledge-bases/${kb.id}`, { name: name.value.trim(), description: desc.value, summary_model_id: sum.value, embedding_model_id: emb.value,
        chunking_config: chunking, config: { chunking_config: chunking } });
      invalidateKbs();
      toast(t("kb.saved"));
    } catch (err) { fail(err); }
  } },
    h("label", { class: "field" }, h("span", null, t("kb.name")), name),
    h("label", { class: "field" }, h("span", null, t("kb.description")), desc),
    h("label", { class: "field" }, h("span", null, t("kb.chunkSize")), size),
    h("label", { class: "field" }, h("span", null, t("kb.chunkOverlap")), overlap),
    h("label", { class: "field" }, h("span", null, t("kb.embedding")), emb),
    h("label", { class: "field" }, h("span", null, t("kb.summary")), sum),
    h("button", { type: "submit", class: "btn primary" }, t("save")));
  const del = h("button", { type: "button", class: "btn danger", onclick: async () => {
    if (!(await confirmDialog(t("confirm.delete", { name: kb.name }), { okLabel: t("delete"), cancelLabel: t("cancel") }))) return;
    try { await api("DELETE", `/knowledge-bases/${kb.id}`); invalidateKbs(); navigate("/kb"); } catch (e) { fail(e); }
  } }, t("delete"));
  clear(root).append(form, h("div", { class: "card danger-zone" }, del));
}
