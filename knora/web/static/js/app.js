// Entry point: sign-in (stored tokens or key, else auto-setup on this machine, else the login page), the app
// shell, routing between pages.
import { h, clear, toast } from "./dom.js";
import { t, getLang, setLang, languages, onLangChange } from "./i18n.js";
import { getKey, setKey, getSession, setSession, autoSetup, checkKey, setUnauthorizedHandler, hasCredentials,
  forgetCredentials, logoutRemote } from "./api.js";
import { loadMe, currentMe, clearMe, can, manualLogin, setManualLogin, renderLogin as loginPage, accountBar, pendingInvitations,
  needsTeam } from "./account.js";
import { renderMembers } from "./members.js";
import { renderKeys } from "./keys.js";
import { setRouteHandler, startRouter, match, navigate } from "./router.js";
import { renderChat } from "./chat.js";
import { renderKnowledge } from "./knowledge.js";
import { renderSettings } from "./settings.js";
import { hideCitation } from "./popover.js";
import { closeDebug } from "./debug.js";

const root = document.getElementById("app");
let view = null;

function shell(section) {
  const navLink = (href, key, id, badge) => h("a", { href, "data-link": "", id, class: section === id ? "active" : "", "aria-current": section === id ? "page" : null }, t(key), badge);
  const pending = pendingInvitations();
  const invites = pending ? [h("span", { class: "badge count", id: "pending-invitations", "aria-hidden": "true" }, String(pending)),
    h("span", { class: "sr-only" }, ` (${t("invites.pending", { n: pending })})`)] : null;
  const burger = h("button", { type: "button", class: "icon burger", id: "burger", "aria-label": t("nav.chat"), "aria-controls": "sidebar", "aria-expanded": "false",
    onclick: () => toggleSidebar() }, "☰");
  const lang = h("select", { id: "lang", "aria-label": t("settings.language"), onchange: (e) => setLang(e.target.value) },
    languages().map((l) => h("option", { value: l, selected: l === getLang() }, l === "zh" ? "中文" : "English")));
  const header = h("header", { class: "topbar" },
    section === "chat" ? burger : null,
    h("a", { href: "/chat", "data-link": "", class: "brand" }, "◆ ", t("app.name")),
    h("nav", { class: "mainnav", "aria-label": "main" }, navLink("/chat", "nav.chat", "chat"), navLink("/kb", "nav.knowledge", "kb"),
      navLink("/team", "nav.team", "team", invites), can("admin") ? navLink("/keys", "nav.keys", "keys") : null, navLink("/settings", "nav.settings", "settings")),
    h("span", { class: "spacer" }), accountBar(switchedTenant, logout), lang);
  view = h("main", { id: "view", class: `view ${section}` });
  clear(root).append(h("a", { href: "#view", class: "skip" }, "Skip to content"), header, view);
  return view;
}

// Another tenant: the same section, from its start (a knowledge base's or a chat's id was the last tenant's).
function switchedTenant() {
  navigate(`/${location.pathname.split("/")[1] || "chat"}`);
}

export function toggleSidebar(force) {
  const sb = document.getElementById("sidebar");
  if (!sb) return;
  const open = force ?? !sb.classList.contains("open");
  sb.classList.toggle("open", open);
  document.getElementById("burger")?.setAttribute("aria-expanded", String(open));
  if (open) sb.querySelector("a,button")?.focus();
}

async function route(path) {
  hideCitation(false);
  closeDebug();
  if (!hasCredentials()) { renderLogin(); return; }
  if (!currentMe()) { try { await loadMe(); } catch { if (!hasCredentials()) return; } }
  let m;
  if (path === "/" || path === "") { navigate("/chat", { replace: true }); return; }
  if (needsTeam() && !match("/team", path) && !match("/settings", path) && !match("/login", path)) {
    navigate("/team", { replace: true }); return; // no team yet: the invitations are on the Team page
  }
  if ((m = match("/chat", path)) || (m = match("/chat/:sid", path))) { await renderChat(shell("chat"), m.sid); return; }
  if ((m = match("/kb", path)) || (m = match("/kb/:kb", path)) || (m = match("/kb/:kb/:tab", path)) || (m = match("/kb/:kb/doc/:doc", path))) {
    await renderKnowledge(shell("kb"), m); return;
  }
  if (match("/settings", path)) { await renderSettings(shell("settings")); return; }
  if (match("/team", path)) { await renderMembers(shell("team")); return; }
  if (match("/keys", path)) { await renderKeys(shell("keys")); return; }
  if (match("/login", path)) { renderLogin(); return; }
  shell("");
  view.append(h("p", { class: "muted pad" }, t("error.notFound")));
}

function renderLogin(message) {
  loginPage(root, () => navigate(location.pathname === "/login" ? "/chat" : location.pathname + location.search), message);
}

// Signs out: a user's session ends on the server; no silent auto-setup until someone signs in again.
export async function logout() {
  await logoutRemote();
  clearMe();
  setManualLogin(true);
  if (location.pathname !== "/login") history.pushState({}, "", "/login");
  renderLogin();
}

// True when a credential works: the stored user's tokens (refreshed if need be), the stored key, else the
// key auto-setup hands to this machine's browser (refused off loopback, and after signing out).
async function signIn() {
  if (getSession()) {
    try { await loadMe(); return true; } catch (e) { if (e.status !== 401) return true; setSession(null); }
  }
  if (getKey()) {
    if (await checkKey(getKey())) { try { await loadMe(); } catch { /* pages say why */ } return true; }
    setKey("");
  }
  if (manualLogin()) return false;
  const token = await autoSetup();
  if (!token || !(await checkKey(token))) return false;
  setKey(token);
  try { await loadMe(); } catch { /* pages say why */ }
  return true;
}

async function boot() {
  document.documentElement.lang = getLang() === "zh" ? "zh-CN" : "en";
  if (!(await signIn())) forgetCredentials();
  setUnauthorizedHandler(() => { forgetCredentials(); clearMe(); renderLogin(t("login.expired")); });
  onLangChange(() => route(location.pathname));
  setRouteHandler(route);
  startRouter();
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") toggleSidebar(false);
  });
  window.knora = { toast, navigate }; // handy in the console and for the browser tests
}

boot();
