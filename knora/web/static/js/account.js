// Who is signed in (GET /auth/me: the user, the role in the active tenant, the memberships), the login page
// (e-mail or username + password, or an API key instead), and the top bar's tenant switcher and sign-out.
import { h, clear, formatDuration } from "./dom.js";
import { t } from "./i18n.js";
import { api, login, checkKey, setKey, setSession, getSession, setTenant, ApiError } from "./api.js";

export const ROLES = ["viewer", "contributor", "admin", "owner"];
const RANK = { viewer: 0, contributor: 1, admin: 2, owner: 3 };
const MANUAL = "knora.manualLogin"; // set by signing out: no silent auto-setup until the next sign-in

let me = null;
let pending = 0; // invitations addressed to the signed-in user, still open (the Team link's badge)

export async function loadMe() {
  me = await api("GET", "/auth/me");
  // a user whose stored tenant is not theirs (any more): the first membership instead
  if (getSession() && me && me.tenant_required && me.memberships?.length) {
    setTenant(me.memberships[0].tenant_id);
    me = await api("GET", "/auth/me");
  }
  await loadPending();
  return me;
}
// A key is no one's e-mail: only a signed-in user has invitations.
export async function loadPending() {
  pending = 0;
  if (!getSession()) return pending;
  try { pending = Number((await api("GET", "/me/invitations/pending-count"))?.pending_count) || 0; } catch { /* the badge is a hint */ }
  return pending;
}
export function pendingInvitations() { return pending; }
export function currentMe() { return me; }
export function clearMe() { me = null; pending = 0; }
// A signed-in user who is a member of no team (invited, not yet accepted): only Team and Settings make sense.
export function needsTeam() { return Boolean(getSession() && me?.user && me.tenant_required && !me.memberships?.length); }
export function myRole() { return me?.role || null; }
export function roleCovers(role, needed) { return role != null && RANK[role] >= RANK[needed]; }
export function can(needed) { return roleCovers(myRole(), needed); }
export function tenantId() { return me?.tenant?.id ?? null; }
export function myUserId() { return getSession() ? me?.user?.id ?? null : null; }
export function grantable(roles = ROLES) { return roles.filter((r) => can(r)); }
export function roleName(role) { return t(`role.${role}`); }

export function manualLogin() { return localStorage.getItem(MANUAL) === "1"; }
export function setManualLogin(on) { if (on) localStorage.setItem(MANUAL, "1"); else localStorage.removeItem(MANUAL); }

// Login failures as a person reads them: a wrong login, a wait after too many, else the server's words.
export function loginError(e) {
  if (e instanceof ApiError && e.status === 401) return t("login.wrong");
  if (e instanceof ApiError && e.status === 429) {
    return e.retryAfter ? t("login.wait", { time: formatDuration(e.retryAfter) }) : t("login.tooMany");
  }
  return t("error.generic", { msg: e.message || String(e) });
}

// The login page into ``root``; ``onDone`` runs once signed in.
export function renderLogin(root, onDone, message) {
  const err = h("p", { class: "error", role: "alert", id: "login-error" }, message || "");
  const name = h("input", { id: "login-name", name: "username", autocomplete: "username", required: true });
  const password = h("input", { id: "login-password", name: "password", type: "password", autocomplete: "current-password", required: true });
  const submit = h("button", { type: "submit", class: "btn primary block" }, t("login.submit"));
  const form = h("form", { class: "login card", id: "login-form", onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = "";
    submit.disabled = true;
    try {
      await login(name.value.trim(), password.value);
      setManualLogin(false);
      await done();
    } catch (ex) {
      err.textContent = loginError(ex);
      password.select();
    } finally { submit.disabled = false; }
  } },
    h("h1", null, "◆ ", t("login.title")),
    h("label", { class: "field" }, h("span", null, t("login.name")), name),
    h("label", { class: "field" }, h("span", null, t("login.password")), password), err, submit,
    h("button", { type: "button", class: "btn ghost small", id: "use-key", onclick: () => keyForm() }, t("login.useKey")));

  async function done() {
    try { await loadMe(); } catch { /* the page asked for will say what is wrong */ }
    onDone();
  }

  function keyForm() {
    const input = h("input", { id: "api-key", type: "password", autocomplete: "off", required: true, "aria-describedby": "login-hint" });
    const keyErr = h("p", { class: "error", role: "alert" });
    const f = h("form", { class: "login card", onsubmit: async (e) => {
      e.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      if (await checkKey(key)) { setSession(null); setTenant(""); setKey(key); setManualLogin(false); await done(); }
      else { keyErr.textContent = t("login.bad"); input.select(); }
    } },
      h("h1", null, "◆ ", t("login.title")),
      h("p", { id: "login-hint", class: "muted" }, t("login.hint")),
      h("label", { class: "field" }, h("span", null, t("login.key")), input), keyErr,
      h("button", { type: "submit", class: "btn primary block" }, t("login.submit")),
      h("button", { type: "button", class: "btn ghost small", onclick: () => { f.replaceWith(form); name.focus(); } }, t("login.usePassword")));
    form.replaceWith(f);
    input.focus();
  }

  clear(root).append(h("div", { class: "login-wrap" }, form));
  name.focus();
}

// The top bar's account corner: the tenant switcher (a user with several memberships), who is signed in, sign out.
export function accountBar(onTenantChange, onLogout) {
  const parts = [];
  const memberships = me?.memberships || [];
  if (getSession() && memberships.length > 1) {
    const current = tenantId();
    parts.push(h("select", { id: "tenant", "aria-label": t("tenant.switch"), onchange: async (e) => {
      setTenant(e.target.value);
      try { await loadMe(); } catch { /* shown by the page */ }
      onTenantChange();
    } }, memberships.map((m) => h("option", { value: String(m.tenant_id), selected: m.tenant_id === current },
      `${m.tenant_name || `#${m.tenant_id}`} · ${roleName(m.role)}`))));
  } else if (me?.tenant?.name && getSession()) {
    parts.push(h("span", { class: "muted small", id: "tenant-name" }, me.tenant.name));
  }
  if (me?.user) {
    parts.push(h("span", { class: "small who", id: "whoami" }, me.user.username || me.user.email,
      me.role ? h("span", { class: "badge" }, roleName(me.role)) : null));
  }
  parts.push(h("button", { type: "button", class: "btn ghost small", id: "logout", onclick: onLogout }, t("logout")));
  return parts;
}
