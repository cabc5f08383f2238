// API keys of the active tenant (admins and owners): listed by prefix, role, last use and expiry; a new key
// (a name, a role no higher than the caller's, an optional expiry in days) is shown once, with a copy button;
// revoking asks first.
import { h, clear, formatTime, toast, confirmDialog } from "./dom.js";
import { t } from "./i18n.js";
import { api } from "./api.js";
import { can, tenantId, grantable, roleName } from "./account.js";

const KEY_ROLES = ["viewer", "contributor", "admin"]; // no key is an owner's
// keys the server keeps for itself (knora/services/tenants/service.py): revoking one signs that client out
const OWN_KEYS = { ui: "keys.uiKey", cli: "keys.cliKey" };

export async function renderKeys(root) {
  const tid = tenantId();
  const page = h("div", { class: "page" }, h("h1", null, t("keys.title")));
  clear(root).append(page);
  if (tid == null || !can("admin")) { page.append(h("p", { class: "error", role: "alert" }, t("keys.adminOnly"))); return; }
  const base = `/tenants/${tid}/api-keys`;
  const msg = h("p", { class: "error", role: "alert", id: "keys-msg" });
  const list = h("div", { id: "key-list" });
  const fresh = h("div", { id: "new-key-box" });
  page.append(h("section", { class: "card" }, h("h2", null, t("keys.list")), list, msg), fresh, createForm());

  async function draw() {
    let rows;
    try { rows = (await api("GET", base)) || []; } catch (e) { msg.textContent = e.message; return; }
    clear(list);
    if (!rows.length) { list.append(h("p", { class: "muted" }, t("keys.empty"))); return; }
    list.append(h("div", { class: "table-wrap" }, h("table", { class: "grid wide-table" },
      h("thead", null, h("tr", null, [t("keys.name"), t("keys.prefix"), t("team.role"), t("keys.lastUsed"), t("keys.expires"), t("keys.created")]
        .map((x) => h("th", null, x)), h("th", null, h("span", { class: "sr-only" }, t("team.actions"))))),
      h("tbody", null, rows.map((k) => h("tr", { class: "api-key", dataset: { keyId: k.id } },
        h("td", null, k.name, OWN_KEYS[k.name] ? h("div", { class: "small muted" }, t(OWN_KEYS[k.name])) : null),
        h("td", null, h("code", null, k.api_key || "—")), h("td", null, roleName(k.role)),
        h("td", { class: "small muted" }, k.last_used_at ? formatTime(k.last_used_at) : t("keys.never")),
        h("td", { class: "small muted" }, k.expires_at ? formatTime(k.expires_at) : t("keys.noExpiry")),
        h("td", { class: "small muted" }, formatTime(k.created_at)),
        h("td", null, h("button", { type: "button", class: "btn ghost small danger", onclick: () => revoke(k) }, t("keys.revoke")))))))));
  }

  async function revoke(k) {
    if (!(await confirmDialog(t("keys.confirmRevoke", { name: k.name }), { okLabel: t("keys.revoke"), cancelLabel: t("cancel") }))) return;
    msg.textContent = "";
    try { await api("DELETE", `${base}/${encodeURIComponent(k.id)}`); toast(t("keys.revoked")); } catch (e) { msg.textContent = e.message; }
    await draw();
  }

  function showOnce(created) {
    const field = h("input", { id: "new-key", readOnly: true, value: created.token, "aria-label": t("keys.newKey"), class: "mono" });
    const copy = h("button", { type: "button", class: "btn small", id: "copy-key", onclick: async () => {
      try { await navigator.clipboard.writeText(created.token); toast(t("settings.copied")); } catch { field.select(); }
    } }, t("settings.copy"));
    clear(fresh).append(h("section", { class: "card new-key", role: "status" },
      h("h2", null, t("keys.createdTitle", { name: created.name })),
      h("p", { class: "warn-text" }, t("keys.onceWarning")),
      h("div", { class: "row" }, field, copy,
        h("button", { type: "button", class: "btn ghost small", id: "key-done", onclick: () => clear(fresh) }, t("keys.done")))));
    field.select();
  }

  function createForm() {
    const name = h("input", { name: "name", required: true, maxLength: 255, autocomplete: "off" });
    const role = h("select", { name: "role" }, grantable(KEY_ROLES).map((r) => h("option", { value: r, selected: r === "viewer" }, roleName(r))));
    const days = h("input", { name: "expires_days", type: "number", min: "1", max: "3650", placeholder: t("keys.noExpiry") });
    const formMsg = h("p", { class: "error", role: "alert", id: "key-form-msg" });
    return h("form", { class: "form-grid card", id: "create-key", onsubmit: async (e) => {
      e.preventDefault();
      formMsg.textContent = "";
      const body = { name: name.value.trim(), role: role.value };
      if (days.value) body.expires_at_unix = Math.floor(Date.now() / 1000) + Math.round(Number(days.value) * 86400);
      try {
        const created = await api("POST", base, body);
        name.value = ""; days.value = "";
        showOnce(created);
        await draw();
      } catch (ex) { formMsg.textContent = ex.message; }
    } },
      h("h2", null, t("keys.create")),
      h("label", { class: "field" }, h("span", null, t("keys.name")), name),
      h("label", { class: "field" }, h("span", null, t("team.role")), role),
      h("label", { class: "field" }, h("span", null, t("keys.expiresDays")), days),
      h("div", { class: "row" }, h("button", { type: "submit", class: "btn primary" }, t("keys.create"))), formMsg);
  }

  await draw();
}
