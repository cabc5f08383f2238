// Entry point: sign-in (auto-setup, then a stored or typed API key), the app shell, routing between pages.
import { h, clear, toast } from "./dom.js";
import { t, getLang, setLang, languages, onLangChange } from "./i18n.js";
import { getKey, setKey, autoSetup, checkKey, setUnauthorizedHandler } from "./api.js";
import { setRouteHandler, startRouter, match, navigate } from "./router.js";
import { renderChat } from "./chat.js";
import { renderKnowledge } from "./knowledge.js";
import { renderSettings } from "./settings.js";
import { hideCitation } from "./popover.js";
import { closeDebug } from "./debug.js";

const root = document.getElementById("app");
let view = null;

function shell(section) {
  const navLink = (href, key, id) => h("a", { href, "data-link": "", id, class: section === id ? "active" : "", "aria-current": section === id ? "page" : null }, t(key));
  const burger = h("button", { type: "button", class: "icon burger", id: "burger", "aria-label": t("nav.chat"), "aria-controls": "sidebar", "aria-expanded": "false",
    onclick: () => toggleSidebar() }, "☰");
  const lang = h("select", { id: "lang", "aria-label": t("settings.language"), onchange: (e) => setLang(e.target.value) },
    languages().map((l) => h("option", { value: l, selected: l === getLang() }, l === "zh" ? "中文" : "English")));
  const header = h("header", { class: "topbar" },
    section === "chat" ? burger : null,
    h("a", { href: "/chat", "data-link": "", class: "brand" }, "◆ ", t("app.name")),
    h("nav", { class: "mainnav", "aria-label": "main" }, navLink("/chat", "nav.chat", "chat"), navLink("/kb", "nav.knowledge", "kb"), navLink("/settings", "nav.settings", "settings")),
    h("span", { class: "spacer" }), lang);
  view = h("main", { id: "view", class: `view ${section}` });
  clear(root).append(h("a", { href: "#view", class: "skip" }, "Skip to content"), header, view);
  return view;
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
  if (!getKey()) { renderLogin(); return; }
  let m;
  if (path === "/" || path === "") { navigate("/chat", { replace: true }); return; }
  if ((m = match("/chat", path)) || (m = match("/chat/:sid", path))) { await renderChat(shell("chat"), m.sid); return; }
  if ((m = match("/kb", path)) || (m = match("/kb/:kb", path)) || (m = match("/kb/:kb/:tab", path)) || (m = match("/kb/:kb/doc/:doc", path))) {
    await renderKnowledge(shell("kb"), m); return;
  }
  if (match("/settings", path)) { await renderSettings(shell("settings")); return; }
  if (match("/login", path)) { renderLogin(); return; }
  shell("");
  view.append(h("p", { class: "muted pad" }, t("error.notFound")));
}

function renderLogin(message) {
  const input = h("input", { id: "api-key", type: "password", autocomplete: "off", required: true, "aria-describedby": "login-hint" });
  const err = h("p", { class: "error", role: "alert" }, message || "");
  const form = h("form", { class: "login card", onsubmit: async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    if (await checkKey(key)) { setKey(key); navigate(location.pathname === "/login" ? "/chat" : location.pathname); }
    else { err.textContent = t("login.bad"); input.select(); }
  } },
    h("h1", null, "◆ ", t("login.title")),
    h("p", { id: "login-hint", class: "muted" }, t("login.hint")),
    h("label", { class: "field" }, h("span", null, t("login.key")), input), err,
    h("button", { type: "submit", class: "btn primary block" }, t("login.submit")));
  clear(root).append(h("div", { class: "login-wrap" }, form));
  input.focus();
}

export function logout() {
  setKey("");
  renderLogin();
}

async function boot() {
  document.documentElement.lang = getLang() === "zh" ? "zh-CN" : "en";
  setUnauthorizedHandler(() => { setKey(""); renderLogin(t("login.bad")); });
  if (!getKey() || !(await checkKey(getKey()))) {
    setKey("");
    const token = await autoSetup();
    if (token && (await checkKey(token))) setKey(token);
  }
  onLangChange(() => route(location.pathname));
  setRouteHandler(route);
  startRouter();
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") toggleSidebar(false);
  });
  window.knora = { toast, navigate }; // handy in the console and for the browser tests
}

boot();
