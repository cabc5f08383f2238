// The HTTP client: credentials (a signed-in user's access + refresh tokens, or an API key), the active tenant
// (X-Tenant-ID), WeKnora's envelope, SSE chat streams. A 401 to a signed-in user refreshes the tokens once
// (POST /auth/refresh; rotation: concurrent requests share one refresh) and retries.
import { readSSE } from "./sse.js";

const KEY_STORAGE = "knora.apiKey";
const SESSION_STORAGE = "knora.session"; // {access, refresh} of a user signed in with a password
const TENANT_STORAGE = "knora.tenant"; // the tenant chosen in the switcher (a user's, sent as X-Tenant-ID)
export const API = "/api/v1";

export class ApiError extends Error {
  constructor(status, message, body, retryAfter) { super(message); this.status = status; this.body = body; this.retryAfter = retryAfter; }
}

export function getKey() { return localStorage.getItem(KEY_STORAGE) || ""; }
export function setKey(key) { if (key) localStorage.setItem(KEY_STORAGE, key); else localStorage.removeItem(KEY_STORAGE); }

export function getSession() {
  try {
    const s = JSON.parse(localStorage.getItem(SESSION_STORAGE) || "null");
    return s && typeof s.access === "string" && s.access ? s : null;
  } catch { return null; }
}
export function setSession(s) {
  if (s && s.access) localStorage.setItem(SESSION_STORAGE, JSON.stringify({ access: s.access, refresh: s.refresh || "" }));
  else localStorage.removeItem(SESSION_STORAGE);
}
export function getTenant() { return localStorage.getItem(TENANT_STORAGE) || ""; }
export function setTenant(id) { if (id) localStorage.setItem(TENANT_STORAGE, String(id)); else localStorage.removeItem(TENANT_STORAGE); }
export function hasCredentials() { return Boolean(getSession() || getKey()); }
export function forgetCredentials() { setSession(null); setKey(""); setTenant(""); }

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

function headers(extra) {
  const hs = { Accept: "application/json", ...extra };
  const session = getSession();
  if (session) {
    hs.Authorization = `Bearer ${session.access}`;
    const tenant = getTenant();
    if (tenant) hs["X-Tenant-ID"] = tenant; // a key names its own tenant: sent with a user's token only
  } else {
    const key = getKey();
    if (key) hs["X-API-Key"] = key;
  }
  return hs;
}

let refreshing = null;
// New tokens for the stored refresh token; true when the server gave them. One refresh at a time: the server
// rotates refresh tokens, so a second refresh with the same token would fail.
export function refreshSession() {
  const session = getSession();
  if (!session || !session.refresh) return Promise.resolve(false);
  if (!refreshing) {
    refreshing = (async () => {
      try {
        const res = await fetch(`${API}/auth/refresh`, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify({ refresh_token: session.refresh }) });
        const body = await parseBody(res);
        if (!res.ok || !body || body.success === false || typeof body.access_token !== "string") return false;
        setSession({ access: body.access_token, refresh: body.refresh_token || session.refresh });
        return true;
      } catch { return false; }
    })().finally(() => { refreshing = null; });
  }
  return refreshing;
}

// A 401 to a user's token: another request refreshed meanwhile (retry with its tokens), else refresh once.
async function renewed(used) {
  if (!used || !used.refresh) return false;
  const now = getSession();
  if (now && now.access !== used.access) return true;
  return refreshSession();
}

// fetch with the credentials; on a 401 to a signed-in user, the tokens are refreshed once and the request sent again.
async function send(url, init) {
  const used = getSession();
  let res = await fetch(url, { ...init, headers: headers(init.headers) });
  if (res.status === 401 && (await renewed(used))) res = await fetch(url, { ...init, headers: headers(init.headers) });
  return res;
}

export function retryAfter(res) {
  const n = Number(res.headers.get("retry-after"));
  return Number.isFinite(n) && n > 0 ? n : null;
}

// WeKnora's frontend reads error text from `error` (string), `error.message`, or `message` (api §1.3).
export function errorMessage(body, status) {
  if (body && typeof body === "object") {
    if (typeof body.error === "string") return body.error;
    if (body.error && typeof body.error.message === "string") return body.error.message;
    if (typeof body.message === "string") return body.message;
    if (typeof body.detail === "string") return body.detail;
  }
  if (typeof body === "string" && body) return body.slice(0, 200);
  return `HTTP ${status}`;
}

async function parseBody(res) {
  const text = await res.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { return text; }
}

// request() returns the whole envelope ({success, data, total…}); api() returns just `data`.
export async function request(method, path, body, { signal, query, raw } = {}) {
  let url = path.startsWith("/") ? `${API}${path}` : path;
  if (query) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === "") continue;
      if (Array.isArray(v)) v.forEach((x) => qs.append(k, x)); else qs.append(k, v);
    }
    const s = qs.toString();
    if (s) url += (url.includes("?") ? "&" : "?") + s;
  }
  const init = { method, headers: {}, signal };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
  const res = await send(url, init);
  if (raw) return res;
  const parsed = await parseBody(res);
  if (!res.ok || (parsed && parsed.success === false)) {
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, errorMessage(parsed, res.status), parsed, retryAfter(res));
  }
  return parsed ?? {};
}

// An image behind the API key (a document's image in the chunk viewer): <img> cannot send the header, so the
// bytes are fetched with it and shown through an object URL.
export async function imageURL(url) {
  const res = await send(url, { headers: { Accept: "image/*" } });
  if (!res.ok) throw new ApiError(res.status, `HTTP ${res.status}`, null);
  return URL.createObjectURL(await res.blob());
}

export async function api(method, path, body, opts) {
  const env = await request(method, path, body, opts);
  return env && typeof env === "object" && "data" in env ? env.data : env;
}

// Silent login for the embedded profile: the server hands out the default tenant's key (api §6(c)) to a
// same-origin request only; the JSON content type is required (a page on another origin cannot send it
// without a CORS preflight, which this route never answers — knora/api/same_origin.py).
export async function autoSetup() {
  try {
    const res = await fetch(`${API}/auth/auto-setup`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    if (!res.ok) return null;
    const body = await res.json();
    return body && body.success !== false && typeof body.token === "string" && body.token ? body.token : null;
  } catch { return null; }
}

// POST /auth/login with an e-mail or username and a password: keeps the tokens and the tenant they act in, and
// answers the body (user, tenant, memberships). Throws ApiError: 401 wrong login, 429 with retryAfter.
export async function login(name, password) {
  const who = name.includes("@") ? { email: name } : { username: name };
  const res = await fetch(`${API}/auth/login`, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ ...who, password }) });
  const body = await parseBody(res);
  if (!res.ok || !body || body.success === false || typeof body.token !== "string") {
    throw new ApiError(res.status, errorMessage(body, res.status), body, retryAfter(res));
  }
  setKey("");
  setSession({ access: body.token, refresh: body.refresh_token });
  setTenant(body.tenant && body.tenant.id != null ? body.tenant.id : "");
  return body;
}

// Ends a signed-in user's session on the server (POST /auth/logout), then forgets every credential here.
export async function logoutRemote() {
  if (getSession()) {
    try { await send(`${API}/auth/logout`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }); } catch { /* offline: forgotten here all the same */ }
  }
  forgetCredentials();
}

// Checks a key against an authenticated read; true when the server accepts it.
export async function checkKey(key) {
  const res = await fetch(`${API}/knowledge-bases`, { headers: { "X-API-Key": key, Accept: "application/json" } });
  return res.ok;
}

// POST/GET a chat endpoint and feed every SSE frame to onFrame. Throws ApiError if the stream never starts.
export async function stream(method, path, body, onFrame, { signal, query } = {}) {
  const res = await request(method, path, body, { signal, query, raw: true });
  const type = res.headers.get("content-type") || "";
  if (!res.ok || !type.includes("text/event-stream")) {
    const parsed = await parseBody(res);
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, errorMessage(parsed, res.status), parsed, retryAfter(res));
  }
  await readSSE(res, onFrame, signal);
}

// Multipart upload with progress (fetch has no upload progress; XMLHttpRequest does).
export function upload(path, formData, onProgress, retried = false) {
  const used = getSession();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${API}${path}`);
    for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress?.(e.loaded / e.total); };
    xhr.onerror = () => reject(new ApiError(0, "network error", null));
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { body = xhr.responseText; }
      if (xhr.status >= 200 && xhr.status < 300 && !(body && body.success === false)) resolve(body?.data ?? body);
      else if (xhr.status === 401 && !retried) {
        renewed(used).then((ok) => ok ? upload(path, formData, onProgress, true).then(resolve, reject)
          : reject(new ApiError(401, errorMessage(body, 401), body)));
      } else reject(new ApiError(xhr.status, errorMessage(body, xhr.status), body));
    };
    xhr.send(formData);
  });
}
