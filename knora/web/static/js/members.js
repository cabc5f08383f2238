// Team: the active tenant's members with their roles and its invitations. Admins (and owners) add members by
// e-mail, change roles, remove members, invite and revoke invitations; nobody is offered a role above their
// own, and the server's refusals (403, 404, 409) are shown where they happened. Members come 100 a page.
// Above them, a signed-in user's own open invitations (any team's), to accept or decline.
import { h, clear, formatTime, confirmDialog, toast } from "./dom.js";
import { t } from "./i18n.js";
import { api, getSession } from "./api.js";
import { navigate } from "./router.js";
import { can, tenantId, myRole, myUserId, roleCovers, grantable, roleName, loadMe } from "./account.js";

export const MEMBERS_PAGE_SIZE = 100; // the server's largest page

export async function renderMembers(root) {
  const tid = tenantId();
  const page = h("div", { class: "page" }, h("h1", null, t("team.title")));
  clear(root).append(page);
  const mine = getSession() ? await myInvitations(tid == null) : null;
  if (mine) page.append(mine);
  if (tid == null) { page.append(h("p", { class: "error", role: "alert" }, t("team.noTenant"))); return; }
  const base = `/tenants/${tid}`;
  const admin = can("admin");
  const membersMsg = h("p", { class: "error", role: "alert", id: "members-msg" });
  const membersBox = h("div", { id: "members" });
  const pager = h("nav", { class: "row pager", id: "members-pager", "aria-label": t("team.pages") });
  const invitesMsg = h("p", { class: "error", role: "alert", id: "invitations-msg" });
  const invitesBox = h("div", { id: "invitations" });
  let pageNo = 1, query = "", drawn = 0, typing;
  // Find a member by part of a name or e-mail (the server's ``q``), from the first page; the latest typed wins.
  const search = h("input", { type: "search", id: "member-search", "aria-label": t("team.search"), placeholder: t("team.search"),
    autocomplete: "off", oninput: () => {
      clearTimeout(typing);
      typing = setTimeout(() => { query = search.value.trim(); pageNo = 1; drawMembers(); }, 250);
    } });
  page.append(
    h("section", { class: "card" }, h("h2", null, t("team.members")), admin ? null : h("p", { class: "muted small" }, t("team.readOnly")),
      h("div", { class: "row" }, search), membersBox, pager, membersMsg, admin ? emailForm("add-member", t("team.add"), async (email, role) => {
        await api("POST", `${base}/members`, { email, role });
        await drawMembers();
      }, membersMsg) : null),
    h("section", { class: "card" }, h("h2", null, t("team.invitations")), invitesBox, invitesMsg,
      admin ? emailForm("invite", t("team.invite"), async (email, role) => {
        await api("POST", `${base}/invitations`, { email, role });
        await drawInvitations();
      }, invitesMsg) : null));

  async function drawMembers() {
    const mine = ++drawn;
    let data;
    try { data = await api("GET", `${base}/members`, undefined, { query: { page: pageNo, page_size: MEMBERS_PAGE_SIZE, q: query } }); }
    catch (e) { if (mine === drawn) membersMsg.textContent = e.message; return; }
    if (mine !== drawn) return; // a later search or page is on its way
    const rows = data?.members || [];
    const total = Number(data?.total) || rows.length;
    const pages = Math.max(1, Math.ceil(total / (Number(data?.page_size) || MEMBERS_PAGE_SIZE)));
    if (pageNo > pages) { pageNo = pages; await drawMembers(); return; } // the last page emptied meanwhile
    drawPager(total, pages);
    const me = myUserId();
    if (!rows.length && query) { clear(membersBox).append(h("p", { class: "muted", id: "members-none" }, t("team.noMatch"))); return; }
    clear(membersBox).append(h("div", { class: "table-wrap" }, h("table", { class: "grid wide-table" },
      h("thead", null, h("tr", null, h("th", null, t("team.name")), h("th", null, t("team.email")), h("th", null, t("team.role")),
        h("th", null, t("team.joined")), admin ? h("th", null, h("span", { class: "sr-only" }, t("team.actions"))) : null)),
      h("tbody", null, rows.map((m) => memberRow(m, m.user_id === me))))));
  }

  // Shown once the team outgrows a page: previous, "page 2 of 3 · 230 members", next.
  function drawPager(total, pages) {
    clear(pager);
    if (pages <= 1) return;
    const go = (n) => async () => { pageNo = n; membersMsg.textContent = ""; await drawMembers(); };
    pager.append(
      h("button", { type: "button", class: "btn ghost small", id: "members-prev", disabled: pageNo <= 1, onclick: go(pageNo - 1) }, t("team.prev")),
      h("span", { class: "small muted", id: "members-page", "aria-live": "polite" }, t("team.page", { page: pageNo, pages, total })),
      h("button", { type: "button", class: "btn ghost small", id: "members-next", disabled: pageNo >= pages, onclick: go(pageNo + 1) }, t("team.next")));
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

// The signed-in user's open invitations (GET /me/invitations), each to accept or decline; null when there are
// none and the user has a team (nothing to say). Answering one reloads who the user is and redraws the page:
// an accepted team appears in the tenant switcher.
async function myInvitations(always) {
  const msg = h("p", { class: "error", role: "alert", id: "my-invitations-msg" });
  let rows;
  try { rows = (await api("GET", "/me/invitations"))?.invitations || []; }
  catch (e) { rows = []; msg.textContent = e.message; }
  if (!rows.length && !always && !msg.textContent) return null;
  const answer = (i, accept) => async () => {
    if (!accept && !(await confirmDialog(t("invites.confirmDecline", { name: teamName(i) }), { okLabel: t("invites.decline"), cancelLabel: t("cancel") }))) return;
    msg.textContent = "";
    try { await api("POST", `/me/invitations/${encodeURIComponent(i.id)}/${accept ? "accept" : "decline"}`, {}); }
    catch (e) { msg.textContent = e.message; return; }
    try { await loadMe(); } catch { /* the page says what is wrong */ }
    toast(t(accept ? "invites.joined" : "invites.declined", { name: teamName(i) }));
    navigate(location.pathname); // the top bar too: the switcher lists the new team
  };
  return h("section", { class: "card", id: "my-invitations" }, h("h2", null, t("invites.title")),
    rows.length ? h("ul", { class: "plain-list" }, rows.map((i) => h("li", { class: "my-invitation row", dataset: { invitationId: i.id } },
      h("span", null, h("strong", null, teamName(i)), " ", h("span", { class: "badge" }, roleName(i.role)),
        i.expires_at ? h("span", { class: "muted small" }, ` · ${t("invites.expires", { when: formatTime(i.expires_at) })}`) : null),
      h("span", { class: "spacer" }),
      h("button", { type: "button", class: "btn primary small", onclick: answer(i, true) }, t("invites.accept")),
      h("button", { type: "button", class: "btn ghost small", onclick: answer(i, false) }, t("invites.decline")))))
      : h("p", { class: "muted" }, t("invites.none")), msg);
}

function teamName(i) { return i.tenant_name || `#${i.tenant_id}`; }

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
