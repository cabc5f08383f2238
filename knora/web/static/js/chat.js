// The chat page: sessions sidebar, message history (paged), the composer with mode / web search / @-scoping,
// streamed answers, stop, and resume of an unfinished answer after a reload.
import { h, clear, toast, promptDialog, confirmDialog, formatTime, formatShortDate } from "./dom.js";
import { t } from "./i18n.js";
import { api, request, stream } from "./api.js";
import { newTurn, applyFrame, fromMessage, isTerminal } from "./turn.js";
import { AnswerView } from "./answer.js";
import { navigate } from "./router.js";
import { MentionMenu } from "./mentions.js";

const PAGE_SIZE = 30;
const HISTORY_LIMIT = 20;
const AGENTS = { quick: "builtin-quick-answer", smart: "builtin-smart-reasoning" };

const S = {
  sessions: [], sessionsPage: 0, sessionsTotal: 0,
  sid: null, oldest: null, hasMore: false,
  kbs: null, scope: [],
  mode: localStorage.getItem("knora.mode") === "smart" ? "smart" : "quick",
  webSearch: localStorage.getItem("knora.webSearch") === "1",
  active: null, // {turn, view, abort, sid}
  els: {},
};

export function activeStream() { return S.active; }

// ---------------------------------------------------------------------------------------------- page
export async function renderChat(root, sid) {
  if (S.active && S.active.sid !== sid) detachActive();
  const E = S.els;
  E.sessionList = h("ul", { class: "session-list", role: "list" });
  E.more = h("button", { type: "button", class: "btn ghost small", hidden: true, onclick: () => loadSessions(false) }, t("sessions.more"));
  E.sidebar = h("nav", { class: "sidebar", id: "sidebar", "aria-label": t("nav.chat") },
    h("button", { type: "button", class: "btn primary block", id: "new-chat", onclick: () => newChat() }, "+ ", t("sessions.new")),
    E.sessionList, E.more);
  E.earlier = h("button", { type: "button", class: "btn ghost small earlier", hidden: true, onclick: loadEarlier }, t("chat.earlier"));
  E.list = h("div", { class: "messages", id: "messages" });
  E.scroller = h("div", { class: "scroller" }, h("div", { class: "thread" }, E.earlier, E.list));
  E.composer = buildComposer();
  E.main = h("section", { class: "chat-main", "aria-label": t("nav.chat") }, E.scroller, E.composer);
  clear(root).append(h("div", { class: "chat-layout" }, E.sidebar, E.main));
  loadSessions(true);
  loadKbs();
  await openSession(sid);
}

function buildComposer() {
  const E = S.els;
  E.input = h("textarea", { id: "chat-input", rows: 2, placeholder: t("chat.placeholder"), "aria-label": t("chat.placeholder"),
    "aria-autocomplete": "list", "aria-controls": "mention-menu" });
  E.chips = h("div", { class: "chips", "aria-label": t("chat.scope") });
  E.mention = new MentionMenu(E.input, { source: mentionSource, onPick: addScope });
  E.modeSel = h("select", { id: "mode", "aria-label": t("chat.mode"), onchange: (e) => { S.mode = e.target.value; localStorage.setItem("knora.mode", S.mode); } },
    h("option", { value: "quick", selected: S.mode === "quick" }, t("chat.mode.quick")),
    h("option", { value: "smart", selected: S.mode === "smart" }, t("chat.mode.smart")));
  E.web = h("input", { type: "checkbox", id: "web-search", checked: S.webSearch, onchange: (e) => { S.webSearch = e.target.checked; localStorage.setItem("knora.webSearch", S.webSearch ? "1" : "0"); } });
  E.send = h("button", { type: "submit", class: "btn primary", id: "send" }, t("chat.send"));
  E.stop = h("button", { type: "button", class: "btn danger", id: "stop", hidden: true, onclick: stopActive }, "■ ", t("chat.stop"));
  E.input.addEventListener("keydown", (e) => {
    if (e.defaultPrevented) return;
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && !E.mention.isOpen()) { e.preventDefault(); submit(); }
  });
  const form = h("form", { class: "composer", onsubmit: (e) => { e.preventDefault(); submit(); } },
    E.chips, E.input, E.mention.el,
    h("div", { class: "composer-bar" },
      h("label", { class: "inline" }, h("span", { class: "sr-only" }, t("chat.mode")), E.modeSel),
      h("label", { class: "inline toggle" }, E.web, h("span", null, t("chat.websearch"))),
      h("span", { class: "spacer" }), E.stop, E.send));
  renderChips();
  setBusy(!!S.active);
  return form;
}

// --------------------------------------------------------------------------------------------- sessions
async function loadSessions(reset) {
  if (reset) { S.sessions = []; S.sessionsPage = 0; }
  try {
    const env = await request("GET", "/sessions", undefined, { query: { page: S.sessionsPage + 1, page_size: PAGE_SIZE } });
    const rows = env.data || [];
    S.sessionsPage += 1;
    S.sessionsTotal = env.total ?? rows.length;
    const known = new Set(S.sessions.map((s) => s.id));
    S.sessions.push(...rows.filter((r) => !known.has(r.id)));
    renderSessions();
  } catch (e) { toast(t("error.generic", { msg: e.message }), "error"); }
}

function sortedSessions() {
  return [...S.sessions].sort((a, b) => (b.is_pinned ? 1 : 0) - (a.is_pinned ? 1 : 0) ||
    String(b.updated_at || b.created_at).localeCompare(String(a.updated_at || a.created_at)));
}

function renderSessions() {
  const E = S.els;
  if (!E.sessionList) return;
  clear(E.sessionList);
  if (!S.sessions.length) E.sessionList.append(h("li", { class: "muted empty" }, t("sessions.empty")));
  for (const s of sortedSessions()) {
    const title = s.title || t("sessions.untitled");
    const when = s.updated_at || s.created_at;
    E.sessionList.append(h("li", { class: `session${s.id === S.sid ? " current" : ""}${s.is_pinned ? " pinned" : ""}`, dataset: { sid: s.id } },
      h("a", { href: `/chat/${s.id}`, "data-link": "", class: "session-title", "aria-current": s.id === S.sid ? "page" : null, title: `${title}\n${formatTime(when)}` },
        h("span", { class: "session-name" }, s.is_pinned ? h("span", { class: "pin-mark", "aria-hidden": "true" }, "★ ") : null, title),
        when ? h("time", { class: "session-date", datetime: String(when) }, formatShortDate(when)) : null),
      h("span", { class: "session-actions" },
        h("button", { type: "button", class: "icon", "aria-label": `${t("sessions.rename")}: ${title}`, title: t("sessions.rename"), onclick: () => renameSession(s) }, "✎"),
        h("button", { type: "button", class: "icon", "aria-label": `${t(s.is_pinned ? "sessions.unpin" : "sessions.pin")}: ${title}`, title: t(s.is_pinned ? "sessions.unpin" : "sessions.pin"), onclick: () => togglePin(s) }, s.is_pinned ? "★" : "☆"),
        h("button", { type: "button", class: "icon danger", "aria-label": `${t("delete")}: ${title}`, title: t("delete"), onclick: () => deleteSession(s) }, "✕"))));
  }
  E.more.hidden = S.sessions.length >= S.sessionsTotal;
}

function upsertSession(s) {
  const i = S.sessions.findIndex((x) => x.id === s.id);
  if (i >= 0) S.sessions[i] = { ...S.sessions[i], ...s }; else { S.sessions.unshift(s); S.sessionsTotal++; }
  renderSessions();
}

async function renameSession(s) {
  const v = await promptDialog(t("sessions.rename"), [{ name: "title", label: t("sessions.title"), value: s.title, required: true }],
    { submitLabel: t("save"), cancelLabel: t("cancel") });
  if (!v) return;
  try { upsertSession(await api("PUT", `/sessions/${s.id}`, { title: v.title, description: s.description || "" })); }
  catch (e) { toast(t("error.generic", { msg: e.message }), "error"); }
}

async function togglePin(s) {
  try {
    const res = await api(s.is_pinned ? "DELETE" : "POST", `/sessions/${s.id}/pin`);
    upsertSession(res && res.id ? res : { ...s, is_pinned: !s.is_pinned });
  } catch (e) { toast(t("error.generic", { msg: e.message }), "error"); }
}

async function deleteSession(s) {
  if (!(await confirmDialog(t("confirm.delete", { name: s.title || t("sessions.untitled") }), { okLabel: t("delete"), cancelLabel: t("cancel") }))) return;
  try {
    await api("DELETE", `/sessions/${s.id}`);
    S.sessions = S.sessions.filter((x) => x.id !== s.id);
    S.sessionsTotal = Math.max(0, S.sessionsTotal - 1);
    renderSessions();
    if (S.sid === s.id) navigate("/chat");
  } catch (e) { toast(t("error.generic", { msg: e.message }), "error"); }
}

function newChat() {
  if (S.active) detachActive();
  navigate("/chat");
  document.getElementById("chat-input")?.focus();
}

// --------------------------------------------------------------------------------------------- history
async function openSession(sid) {
  S.sid = sid || null;
  S.oldest = null;
  S.hasMore = false;
  renderSessions();
  const E = S.els;
  clear(E.list);
  E.earlier.hidden = true;
  if (!sid) { E.list.append(emptyState()); return; }
  if (S.active && S.active.sid === sid) { // came back to the page while our own stream still runs
    await loadHistory(false, S.active.turn.messageId);
    E.list.append(S.active.view.el);
    scrollToEnd(true);
    return;
  }
  const msgs = await loadHistory(false);
  const last = msgs[msgs.length - 1];
  if (last && last.role === "assistant" && last.is_completed === false) {
    E.list.querySelector(`[data-message-id="${CSS.escape(last.id)}"]`)?.remove();
    resume(sid, last.id);
  }
}

function emptyState() {
  return h("div", { class: "empty-state" }, h("h2", null, t("app.name")), h("p", null, t("chat.empty")));
}

async function loadHistory(earlier, skipId) {
  const E = S.els;
  const sid = S.sid;
  let msgs;
  try {
    msgs = await api("GET", `/messages/${sid}/load`, undefined, { query: { limit: HISTORY_LIMIT, before_time: earlier ? S.oldest : undefined } });
  } catch (e) {
    if (e.status === 404) { E.list.append(h("p", { class: "muted" }, t("error.notFound"))); return []; }
    toast(t("error.generic", { msg: e.message }), "error");
    return [];
  }
  if (sid !== S.sid) return [];
  msgs = Array.isArray(msgs) ? msgs : [];
  if (msgs.length) S.oldest = msgs[0].created_at;
  S.hasMore = msgs.length >= HISTORY_LIMIT;
  E.earlier.hidden = !S.hasMore;
  const frag = document.createDocumentFragment();
  for (const m of msgs) {
    if (skipId && m.id === skipId) continue;
    frag.append(m.role === "user" ? userBubble(m.content, m.mentioned_items) : historyAnswer(m));
  }
  if (earlier) {
    const before = E.scroller.scrollHeight;
    E.list.prepend(frag);
    E.scroller.scrollTop += E.scroller.scrollHeight - before;
  } else {
    E.list.append(frag);
    scrollToEnd(true);
  }
  return msgs;
}

function loadEarlier() { if (S.sid && S.oldest) loadHistory(true); }

function historyAnswer(m) {
  const view = new AnswerView({ onApproval });
  const turn = fromMessage(m);
  if (turn.status === "streaming") turn.status = "complete";
  view.renderNow(turn);
  view.el.dataset.messageId = m.id;
  return view.el;
}

function userBubble(text, mentioned) {
  return h("article", { class: "msg user" },
    (mentioned || []).length ? h("div", { class: "chips small" }, mentioned.map((m) => h("span", { class: `chip ${m.type}` }, "@", m.name))) : null,
    h("div", { class: "bubble" }, text));
}

function scrollToEnd(force) {
  const sc = S.els.scroller;
  if (!sc) return;
  const near = sc.scrollHeight - sc.scrollTop - sc.clientHeight < 120;
  if (force || near) sc.scrollTop = sc.scrollHeight;
}

// --------------------------------------------------------------------------------------------- scope
async function loadKbs() {
  if (S.kbs) return S.kbs;
  try { S.kbs = (await api("GET", "/knowledge-bases")) || []; } catch { S.kbs = []; }
  return S.kbs;
}
export function invalidateKbs() { S.kbs = null; MentionMenu.clearCache(); }

async function mentionSource() {
  const kbs = await loadKbs();
  const docs = [];
  await Promise.all(kbs.slice(0, 20).map(async (kb) => {
    try {
      const rows = await MentionMenu.cached(`docs:${kb.id}`, () => api("GET", `/knowledge-bases/${kb.id}/knowledge`, undefined, { query: { page: 1, page_size: 100 } }));
      for (const d of rows || []) docs.push({ id: d.id, name: d.title || d.file_name || d.id, type: "file", kb_id: kb.id, kb_name: kb.name });
    } catch { /* a KB we cannot list is just not offered */ }
  }));
  return [...kbs.map((kb) => ({ id: kb.id, name: kb.name, type: "kb", kb_type: kb.type || "document" })), ...docs];
}

function addScope(item) {
  if (!S.scope.some((s) => s.id === item.id)) S.scope.push(item);
  renderChips();
}

function renderChips() {
  const E = S.els;
  clear(E.chips);
  if (!S.scope.length) { E.chips.append(h("span", { class: "muted small" }, t("chat.scope"), ": ", t("chat.scope.all"))); return; }
  for (const item of S.scope) {
    E.chips.append(h("span", { class: `chip ${item.type}` }, "@", item.name,
      h("button", { type: "button", class: "chip-x", "aria-label": t("chat.removeScope", { name: item.name }),
        onclick: () => { S.scope = S.scope.filter((x) => x !== item); renderChips(); E.input.focus(); } }, "×")));
  }
}

// --------------------------------------------------------------------------------------------- turns
function setBusy(busy) {
  const E = S.els;
  if (!E.send) return;
  E.send.hidden = busy;
  E.stop.hidden = !busy;
  E.stop.disabled = busy && !S.active?.turn.messageId;
}

async function submit() {
  const E = S.els;
  const query = E.input.value.trim();
  if (!query || S.active) return;
  let sid = S.sid;
  if (!sid) {
    try {
      const s = await api("POST", "/sessions", { title: "", description: "" });
      sid = s.id;
      upsertSession(s);
      S.sid = sid;
      history.replaceState({}, "", `/chat/${sid}`);
      clear(E.list);
      renderSessions();
    } catch (e) { toast(t("error.generic", { msg: e.message }), "error"); return; }
  }
  const kbs = await loadKbs();
  const kbScope = S.scope.filter((x) => x.type === "kb").map((x) => x.id);
  const docScope = S.scope.filter((x) => x.type === "file").map((x) => x.id);
  const body = {
    query,
    knowledge_base_ids: kbScope.length || docScope.length ? kbScope : kbs.map((k) => k.id),
    knowledge_ids: docScope,
    agent_id: AGENTS[S.mode],
    agent_enabled: S.mode === "smart",
    web_search_enabled: S.webSearch,
    mentioned_items: S.scope.map((x) => ({ id: x.id, name: x.name, type: x.type, kb_id: x.kb_id, kb_name: x.kb_name, kb_type: x.kb_type })),
    channel: "web",
  };
  E.input.value = "";
  E.list.querySelector(".empty-state")?.remove();
  E.list.append(userBubble(query, body.mentioned_items));
  const path = S.mode === "smart" ? `/agent-chat/${sid}` : `/knowledge-chat/${sid}`;
  await runStream(sid, (onFrame, signal) => stream("POST", path, body, onFrame, { signal }));
}

function resume(sid, messageId) {
  return runStream(sid, (onFrame, signal) => stream("GET", `/sessions/continue-stream/${sid}`, undefined, onFrame, { signal, query: { message_id: messageId } }), messageId);
}

async function runStream(sid, open, messageId) {
  const E = S.els;
  const turn = newTurn({ sessionId: sid, messageId });
  const view = new AnswerView({ onApproval });
  const abort = new AbortController();
  const active = { turn, view, abort, sid, detached: false };
  S.active = active;
  view.renderNow(turn);
  E.list.append(view.el);
  scrollToEnd(true);
  setBusy(true);
  try {
    await open((f) => {
      applyFrame(turn, f);
      if (f.response_type === "agent_query" && S.active === active) setBusy(true);
      // the turn is over at complete/stop; a session_title may still follow, but the composer is free again
      if (isTerminal(turn) && S.active === active) { S.active = null; setBusy(false); }
      if (f.response_type === "session_title" && turn.title) upsertSession({ id: sid, title: turn.title });
      view.update(turn);
      if (!active.detached) requestAnimationFrame(() => scrollToEnd(false));
    }, abort.signal);
    if (turn.status === "streaming" && !abort.signal.aborted) turn.status = "complete";
  } catch (e) {
    if (!abort.signal.aborted) {
      if (e.status === 404 && messageId) { turn.status = "complete"; } // nothing left to resume
      else { turn.status = "error"; turn.error = e.message; }
    }
  } finally {
    view.renderNow(turn);
    if (S.active === active) { S.active = null; setBusy(false); }
  }
}

// Leaving the conversation: stop reading (generation goes on server-side; coming back resumes it).
function detachActive() {
  if (!S.active) return;
  S.active.detached = true;
  S.active.abort.abort();
  S.active = null;
}

async function stopActive() {
  const a = S.active;
  if (!a || !a.turn.messageId) return;
  S.els.stop.disabled = true;
  try {
    await request("POST", `/sessions/${a.sid}/stop`, { message_id: a.turn.messageId });
  } catch (e) {
    toast(t("error.generic", { msg: e.message }), "error");
    S.els.stop.disabled = false;
  }
}

async function onApproval(step, approved, view) {
  try {
    await request("POST", `/agent/tool-approvals/${encodeURIComponent(step.pendingId)}`, { approved, decision: approved ? "approve" : "deny" });
    step.status = approved ? "approved" : "denied";
    view.update(view.turn);
  } catch (e) { toast(t("error.generic", { msg: e.message }), "error"); }
}

export function focusComposer() { S.els.input?.focus(); }
export { formatTime };
