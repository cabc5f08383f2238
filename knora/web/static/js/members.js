// Team: the active tenant's members with their roles and its invitations. Admins (and owners) add members by
// e-mail, change roles, remove members, invite and revoke invitations; nobody is offered a role above their
// own, and the server's refusals (403, 404, 409) are shown where they happened.
import { h, clear, formatTime, confirmDialog } from "./dom.js";
import { t } from "./i18n.js";
import { api } from "./api.js";
import { can, tenantId, myRole, myUserId, roleCovers, grantable, roleName, loadMe } from "./account.js";

export async function renderMembers(root) {
  const tid = tenantId();
  const page = h("div", { class: "page" }, h("h1", null, t("team.title")));
  clear(root).append(page);
  if (tid == null) { page.append(h("p", { class: "error", role: "alert" }, t("team.noTenant"))); return; }
  const base = `/tenants/${tid}`;
  const admin = can("admin");
  const membersMsg = h("p", { class: "error", role: "alert", id: "members-msg" });
  const membersBox = h("div", { id: "members" });
  const invitesMsg = h("p", { class: "error", role: "alert", id: "invitations-msg" });
  const invitesBox = h("div", { id: "invitations" });
  page.append(
    h("section", { class: "card" }, h("h2", null, t("team.members")), admin ? null : h("p", { class: "muted small" }, t("team.readOnly")),
      membersBox, membersMsg, admin ? emailForm("add-member", t("team.add"), async (email, role) => {
        await api("POST", `${base}/members`, { email, role });
        await drawMembers();
      }, membersMsg) : null),
    h("section", { class: "card" }, h("h2", null, t("team.invitations")), invitesBox, invitesMsg,
      admin ? emailForm("invite", t("team.invite"), async (email, role) => {
        await api("POST", `${base}/invitations`, { email, role });
        await drawInvitations();
      }, invitesMsg) : null));

  async function drawMembers() {
    let rows;
    try { rows = (await api("GET", `${base}/members`, undefined, { query: { page_size: 100 } }))?.members || []; }
    catch (e) { membersMsg.textContent = e.message; return; }
    const me = myUserId();
    clear(membersBox).append(h("div", { class: "table-wrap" }, h("table", { class: "grid wide-table" },
      h("thead", null, h("tr", null, h("th", null, t("team.name")), h("th", null, t("team.email")), h("th", null, t("team.role")),
        h("th", null, t("team.joined")), admin ? h("th", null, h("span", { class: "sr-only" }, t("team.actions"))) : null)),
      h("tbody", null, rows.map((m) => memberRow(m, m.user_id === me))))));
  }

  function memberRow(m, isMe) {
    const manageable = admin && roleCovers(myRole(), m.role);
    const roles = grantable();
    const select = h("select", { name: "role", "aria-label": t("team.roleOf", { name: m.username || m.email }), disabled: !manageable,
      onchange: async (e) => {
        membersMsg.textContent = "";
        try {
          await api("PUT", `${base}/members/${encodeURIComponent(m.user_id)}`, { role: e.target.value });
          if (isMe) { await loadMe(); await renderMembers(root); return; } // my own role: what I may do changed
        } catch (ex) { membersMsg.textContent = ex.message; }
        await drawMembers();
      } },
    (roles.includes(m.role) ? roles : [...roles, m.role]).map((r) => h("option", { value: r, selected: r === m.role }, roleName(r))));
    const remove = h("button", { type: "button", class: "btn ghost small danger", disabled: !manageable, onclick: async () => {
      const who = m.username || m.email;
      if (!(await confirmDialog(t("team.confirmRemove", { name: who }), { okLabel: t("team.remove"), cancelLabel: t("cancel") }))) return;
      membersMsg.textContent = "";
      try { await api("DELETE", `${base}/members/${encodeURIComponent(m.user_id)}`); } catch (ex) { membersMsg.textContent = ex.message; }
      await drawMembers();
    } }, t("team.remove"));
    return h("tr", { class: "member", dataset: { userId: m.user_id } },
      h("td", null, m.username, isMe ? h("span", { class: "muted small" }, ` ${t("team.you")}`) : null),
      h("td", null, m.email),
      h("td", null, admin ? select : h("span", { class: "badge" }, roleName(m.role))),
      h("td", { class: "small muted" }, formatTime(m.joined_at)),
      admin ? h("td", null, remove) : null);
  }

  async function drawInvitations() {
    let rows;
    try { rows = (await api("GET", `${base}/invitations`))?.invitations || []; }
    catch (e) { invitesMsg.textContent = e.message; return; }
    clear(invitesBox);
    if (!rows.length) { invitesBox.append(h("p", { class: "muted" }, t("team.noInvitations"))); return; }
    invitesBox.append(h("div", { class: "table-wrap" }, h("table", { class: "grid wide-table" },
      h("thead", null, h("tr", null, h("th", null, t("team.email")), h("th", null, t("team.role")), h("th", null, t("team.status")),
        h("th", null, t("team.expires")), admin ? h("th", null, h("span", { class: "sr-only" }, t("team.actions"))) : null)),
      h("tbody", null, rows.map((i) => h("tr", { class: "invitation", dataset: { invitationId: i.id } },
        h("td", null, i.email), h("td", null, roleName(i.role)), h("td", null, t(`team.status.${i.status}`)),
        h("td", { class: "small muted" }, formatTime(i.expires_at)),
        admin ? h("td", null, i.status === "pending" ? h("button", { type: "button", class: "btn ghost small danger", onclick: async () => {
          if (!(await confirmDialog(t("team.confirmRevoke", { email: i.email }), { okLabel: t("team.revoke"), cancelLabel: t("cancel") }))) return;
          invitesMsg.textContent = "";
          try { await api("DELETE", `${base}/invitations/${encodeURIComponent(i.id)}`); } catch (ex) { invitesMsg.textContent = ex.message; }
          await drawInvitations();
        } }, t("team.revoke")) : null) : null))))));
  }

  await Promise.all([drawMembers(), drawInvitations()]);
}

// An e-mail and a role (at most the caller's), and a button: adding a member and inviting one.
function emailForm(id, label, submit, msg) {
  const email = h("input", { name: "email", type: "email", required: true, autocomplete: "off" });
  const role = h("select", { name: "role" }, grantable().map((r) => h("option", { value: r, selected: r === "viewer" }, roleName(r))));
  const form = h("form", { class: "form-grid", id, onsubmit: async (e) => {
    e.preventDefault();
    msg.textContent = "";
    try { await submit(email.value.trim(), role.value); email.value = ""; } catch (ex) { msg.textContent = ex.message; }
  } },
    h("label", { class: "field" }, h("span", null, t("team.email")), email),
    h("label", { class: "field" }, h("span", null, t("team.role")), role),
    h("div", { class: "row" }, h("button", { type: "submit", class: "btn primary" }, label)));
  return form;
}
