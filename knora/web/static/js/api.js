// The HTTP client: the tenant's API key (localStorage) as X-API-Key, WeKnora's envelope, SSE chat streams.
import { readSSE } from "./sse.js";

const KEY_STORAGE = "knora.apiKey";
export const API = "/api/v1";

export class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

export function getKey() { return localStorage.getItem(KEY_STORAGE) || ""; }
export function setKey(key) { if (key) localStorage.setItem(KEY_STORAGE, key); else localStorage.removeItem(KEY_STORAGE); }

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

function headers(extra) {
  const hs = { Accept: "application/json", ...extra };
  const key = getKey();
  if (key) hs["X-API-Key"] = key;
  return hs;
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
  const init = { method, headers: headers(), signal };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
  const res = await fetch(url, init);
  if (raw) return res;
  const parsed = await parseBody(res);
  if (!res.ok || (parsed && parsed.success === false)) {
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, errorMessage(parsed, res.status), parsed);
  }
  return parsed ?? {};
}

// An image behind the API key (a document's image in the chunk viewer): <img> cannot send the header, so the
// bytes are fetched with it and shown through an object URL.
export async function imageURL(url) {
  const res = await fetch(url, { headers: headers({ Accept: "image/*" }) });
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
    throw new ApiError(res.status, errorMessage(parsed, res.status), parsed);
  }
  await readSSE(res, onFrame, signal);
}

// Multipart upload with progress (fetch has no upload progress; XMLHttpRequest does).
export function upload(path, formData, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${API}${path}`);
    const key = getKey();
    if (key) xhr.setRequestHeader("X-API-Key", key);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress?.(e.loaded / e.total); };
    xhr.onerror = () => reject(new ApiError(0, "network error", null));
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { body = xhr.responseText; }
      if (xhr.status >= 200 && xhr.status < 300 && !(body && body.success === false)) resolve(body?.data ?? body);
      else reject(new ApiError(xhr.status, errorMessage(body, xhr.status), body));
    };
    xhr.send(formData);
  });
}
