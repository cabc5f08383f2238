// History-API routing: same-origin links marked data-link navigate without a page load; the server answers
// index.html for every client route (knora/web/mount.py).
let handler = () => {};

export function setRouteHandler(fn) { handler = fn; }

export function navigate(path, { replace = false } = {}) {
  if (path !== location.pathname + location.search) {
    if (replace) history.replaceState({}, "", path); else history.pushState({}, "", path);
  }
  handler(location.pathname);
}

export function match(pattern, path) {
  const p = pattern.split("/").filter(Boolean), s = path.split("/").filter(Boolean);
  if (p.length !== s.length) return null;
  const params = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(":")) params[p[i].slice(1)] = decodeURIComponent(s[i]);
    else if (p[i] !== s[i]) return null;
  }
  return params;
}

export function startRouter() {
  window.addEventListener("popstate", () => handler(location.pathname));
  document.addEventListener("click", (e) => {
    const a = e.target.closest?.("a[data-link]");
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
  handler(location.pathname);
}
