// Tiny DOM helpers: h() builds elements without innerHTML, so user text is never parsed as HTML, and it drops
// an href/src that safe-url.js refuses, so no element it builds links to javascript: (or data:, vbscript:…).
import { safeUrl } from "./safe-url.js";

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2).toLowerCase(), v);
      else if (k === "html") el.innerHTML = v; // only for output of the escaping Markdown renderer
      else if (k === "style") el.style.cssText = v; // through the CSSOM: the CSP refuses style attributes
      else if (k === "href" || k === "src") { const u = safeUrl(v); if (u !== null) el.setAttribute(k, u); }
      else if (k in el && typeof v !== "string") el[k] = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

export function formatTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleString();
}

// A list's date: the time for today, the weekday within a week, else the day (and year when not this one),
// in the browser's locale. ``now`` is for tests.
export function formatShortDate(iso, now = new Date()) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return "";
  const day = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
  const days = Math.round((day(now) - day(d)) / 86400000);
  if (days === 0) return d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  if (days > 0 && days < 7) return d.toLocaleDateString(undefined, { weekday: "short" }) + " " + d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  const opts = { month: "short", day: "numeric" };
  if (d.getFullYear() !== now.getFullYear()) opts.year = "numeric";
  return d.toLocaleDateString(undefined, opts);
}

// Time left, rounded as a person would say it: "45 s", "12 min", "2 h 10 min".
export function formatDuration(seconds) {
  if (seconds == null || !isFinite(seconds) || seconds < 0) return "";
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const h = Math.floor(minutes / 60), m = minutes % 60;
  return m ? `${h} h ${m} min` : `${h} h`;
}

export function formatBytes(n) {
  if (!n && n !== 0) return "";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

let toastTimer;
export function toast(message, kind = "info") {
  let el = $("#toast");
  if (!el) { el = h("div", { id: "toast", role: "status", "aria-live": "polite" }); document.body.append(el); }
  el.textContent = message;
  el.className = `toast show ${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = "toast"; }, 4000);
}

// A modal dialog built on <dialog>: Esc closes it natively; resolves with the form's values or null.
export function promptDialog(title, fields, { submitLabel = "OK", cancelLabel = "Cancel" } = {}) {
  return new Promise((resolve) => {
    const inputs = fields.map((f) => {
      const input = f.type === "textarea"
        ? h("textarea", { name: f.name, rows: 4 }, f.value || "")
        : h("input", { name: f.name, type: f.type || "text", value: f.value || "", required: f.required });
      return h("label", { class: "field" }, h("span", null, f.label), input);
    });
    const dialog = h("dialog", { class: "dialog" },
      h("form", { method: "dialog" },
        h("h3", null, title), inputs,
        h("div", { class: "row end" },
          h("button", { type: "button", class: "btn ghost", value: "cancel", onclick: () => dialog.close("cancel") }, cancelLabel),
          h("button", { type: "submit", class: "btn primary", value: "ok" }, submitLabel))));
    dialog.addEventListener("close", () => {
      const ok = dialog.returnValue === "ok";
      const values = Object.fromEntries(fields.map((f) => [f.name, dialog.querySelector(`[name="${f.name}"]`).value]));
      dialog.remove();
      resolve(ok ? values : null);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

export function confirmDialog(message, { okLabel = "OK", cancelLabel = "Cancel" } = {}) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "dialog" },
      h("form", { method: "dialog" }, h("p", null, message),
        h("div", { class: "row end" },
          h("button", { type: "button", class: "btn ghost", onclick: () => dialog.close("cancel") }, cancelLabel),
          h("button", { type: "submit", class: "btn danger", value: "ok" }, okLabel))));
    dialog.addEventListener("close", () => { const ok = dialog.returnValue === "ok"; dialog.remove(); resolve(ok); });
    document.body.append(dialog);
    dialog.showModal();
  });
}
