// Settings: models (chat, embedding, rerank) with a connection test, the tenant's API key, the UI language.
import { h, clear, toast, confirmDialog } from "./dom.js";
import { t, getLang, setLang, languages } from "./i18n.js";
import { api, getKey, getSession } from "./api.js";
import { logout } from "./app.js";
import { currentMe, roleName } from "./account.js";

const TYPES = ["KnowledgeQA", "Embedding", "Rerank"];
const fail = (e) => toast(t("error.generic", { msg: e.message }), "error");

export async function renderSettings(root) {
  const models = h("div", { id: "models" });
  clear(root).append(h("div", { class: "page" }, h("h1", null, t("settings.title")),
    h("section", { class: "card" }, h("h2", null, t("settings.models")), models),
    getKey() ? keySection() : accountSection(), langSection()));
  await drawModels(models);
}

async function drawModels(box) {
  let rows = [];
  try { rows = (await api("GET", "/models")) || []; } catch (e) { clear(box).append(h("p", { class: "error" }, e.message)); return; }
  clear(box);
  if (!rows.length) box.append(h("p", { class: "muted" }, t("model.empty")));
  for (const type of TYPES) {
    const ofType = rows.filter((m) => m.type === type);
    if (!ofType.length) continue;
    box.append(h("h3", null, t(`model.type.${type}`)), h("ul", { class: "model-list" }, ofType.map((m) => modelRow(m, box))));
  }
  const other = rows.filter((m) => !TYPES.includes(m.type));
  if (other.length) box.append(h("ul", { class: "model-list" }, other.map((m) => modelRow(m, box))));
  box.append(modelForm(null, box));
}

function modelRow(m, box) {
  const status = h("span", { class: "small", role: "status" });
  const li = h("li", { class: "model", dataset: { modelId: m.id } },
    h("div", { class: "row" },
      h("strong", null, m.display_name || m.name), h("span", { class: "muted small" }, ` ${m.source || ""} ${m.parameters?.base_url || ""}`),
      m.is_default ? h("span", { class: "badge" }, t("model.default")) : null, m.is_builtin ? h("span", { class: "badge" }, t("model.builtin")) : null,
      h("span", { class: "spacer" }), status,
      h("button", { type: "button", class: "btn ghost small", onclick: () => testModel(m, status) }, t("model.test")),
      m.is_builtin ? null : h("button", { type: "button", class: "btn ghost small", onclick: () => li.replaceWith(modelForm(m, box)) }, t("edit")),
      m.is_builtin ? null : h("button", { type: "button", class: "btn ghost small danger", onclick: async () => {
        if (!(await confirmDialog(t("confirm.delete", { name: m.name }), { okLabel: t("delete"), cancelLabel: t("cancel") }))) return;
        try { await api("DELETE", `/models/${m.id}`); drawModels(box); } catch (e) { fail(e); } } }, t("delete"))));
  return li;
}

async function testModel(m, status) {
  status.textContent = "…";
  status.className = "small";
  try {
    const res = await api("POST", `/models/${m.id}/debug`, {});
    const ok = !(res && (res.success === false || res.ok === false || res.available === false));
    status.textContent = ok ? t("model.testOk") : t("model.testFail", { msg: res.message || res.error || "" });
    status.className = `small ${ok ? "ok" : "error"}`;
  } catch (e) {
    status.textContent = e.status === 404 ? t("model.testUnsupported") : t("model.testFail", { msg: e.message });
    status.className = "small error";
  }
}

function modelForm(m, box) {
  const p = m?.parameters || {};
  const name = h("input", { name: "name", required: true, value: m?.name || "", placeholder: "gpt-4o-mini" });
  const type = h("select", { name: "type" }, TYPES.map((ty) => h("option", { value: ty, selected: (m?.type || "KnowledgeQA") === ty }, t(`model.type.${ty}`))));
  const source = h("select", { name: "source" }, ["remote", "local"].map((s) => h("option", { value: s, selected: (m?.source || "remote") === s }, s)));
  const base = h("input", { name: "base_url", type: "url", value: p.base_url || "", placeholder: "https://api.openai.com/v1" });
  const key = h("input", { name: "api_key", type: "password", autocomplete: "off" });
  const dim = h("input", { name: "dimension", type: "number", min: "1", value: p.embedding_parameters?.dimension || "" });
  const form = h("form", { class: "form-grid model-form card", onsubmit: async (e) => {
    e.preventDefault();
    const parameters = { ...p, base_url: base.value.trim() };
    if (key.value) parameters.api_key = key.value;
    if (type.value === "Embedding" && dim.value) parameters.embedding_parameters = { ...(p.embedding_parameters || {}), dimension: Number(dim.value) };
    const body = { name: name.value.trim(), type: type.value, source: source.value, parameters };
    try {
      if (m) await api("PUT", `/models/${m.id}`, body); else await api("POST", "/models", body);
      drawModels(box);
    } catch (err) { fail(err); }
  } },
    h("h3", null, m ? `${t("edit")}: ${m.name}` : t("model.add")),
    h("label", { class: "field" }, h("span", null, t("model.name")), name),
    h("label", { class: "field" }, h("span", null, t("model.type")), type),
    h("label", { class: "field" }, h("span", null, t("model.source")), source),
    h("label", { class: "field" }, h("span", null, t("model.baseUrl")), base),
    h("label", { class: "field" }, h("span", null, t("model.apiKey")), key),
    h("label", { class: "field" }, h("span", null, t("model.dimension")), dim),
    h("div", { class: "row end" },
      m ? h("button", { type: "button", class: "btn ghost", onclick: () => drawModels(box) }, t("cancel")) : null,
      h("button", { type: "submit", class: "btn primary" }, m ? t("save") : t("model.add"))));
  return form;
}

function keySection() {
  const key = getKey();
  const field = h("input", { id: "settings-key", type: "password", readOnly: true, value: key, "aria-label": t("settings.apiKey") });
  const show = h("button", { type: "button", class: "btn ghost small", onclick: () => {
    field.type = field.type === "password" ? "text" : "password";
    show.textContent = t(field.type === "password" ? "settings.show" : "settings.hide");
  } }, t("settings.show"));
  const copy = h("button", { type: "button", class: "btn ghost small", onclick: async () => {
    try { await navigator.clipboard.writeText(key); toast(t("settings.copied")); } catch { field.type = "text"; field.select(); }
  } }, t("settings.copy"));
  return h("section", { class: "card" }, h("h2", null, t("settings.apiKey")),
    h("div", { class: "row" }, field, show, copy),
    h("p", { class: "small muted" }, "X-API-Key"),
    h("button", { type: "button", class: "btn", onclick: logout }, t("settings.changeKey")));
}

function accountSection() {
  const me = currentMe();
  return h("section", { class: "card", id: "account" }, h("h2", null, t("settings.account")),
    me?.user ? h("p", null, h("strong", null, me.user.username), " ", h("span", { class: "muted" }, me.user.email),
      me.role ? h("span", { class: "badge" }, roleName(me.role)) : null) : null,
    h("button", { type: "button", class: "btn", onclick: logout }, t("logout")),
    getSession() ? passwordForm() : null);
}

// POST /auth/change-password: the server checks the current password and the new one's length (its message
// is shown as it says it), keeps this session and ends every other; the new passwords must match here first.
function passwordForm() {
  const field = (id, key, autocomplete) => {
    const input = h("input", { id, name: id, type: "password", autocomplete, required: true });
    return [input, h("label", { class: "field" }, h("span", null, t(key)), input)];
  };
  const [current, currentField] = field("current-password", "password.current", "current-password");
  const [next, nextField] = field("new-password", "password.new", "new-password");
  const [again, againField] = field("confirm-password", "password.confirm", "new-password");
  const err = h("p", { class: "error wide", role: "alert", id: "password-error" });
  const done = h("p", { class: "ok wide", role: "status", id: "password-done" });
  const submit = h("button", { type: "submit", class: "btn primary" }, t("password.submit"));
  return h("form", { class: "form-grid", id: "change-password", onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = ""; done.textContent = "";
    if (next.value !== again.value) { err.textContent = t("password.mismatch"); again.select(); return; }
    submit.disabled = true;
    try {
      await api("POST", "/auth/change-password", { old_password: current.value, new_password: next.value });
      current.value = next.value = again.value = "";
      done.textContent = t("password.changed");
    } catch (ex) {
      err.textContent = ex.message;
      (ex.status === 400 && /current/i.test(ex.message) ? current : next).select();
    } finally { submit.disabled = false; }
  } },
    h("h3", null, t("password.title")), currentField, nextField, againField,
    h("div", { class: "row" }, submit), err, done);
}

function langSection() {
  return h("section", { class: "card" }, h("h2", null, t("settings.language")),
    h("div", { class: "row", role: "radiogroup", "aria-label": t("settings.language") },
      languages().map((l) => h("label", { class: "inline" },
        h("input", { type: "radio", name: "ui-lang", value: l, checked: l === getLang(), onchange: () => setLang(l) }),
        l === "zh" ? "中文" : "English"))));
}
