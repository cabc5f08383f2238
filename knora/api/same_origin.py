"""Who may get a key without showing one: ``POST /auth/auto-setup`` serves Knora's own UI on this machine.

Being on the loopback interface is not enough: every browser tab on the machine is a loopback client too. A
page from another origin could post to ``http://127.0.0.1:8080`` directly, or rebind its own name to
127.0.0.1 (DNS rebinding), which makes its requests same-origin in the browser's eyes. So the request must

- come from a loopback address (the route's purpose: silent sign-in of the embedded profile);
- name a loopback host in ``Host`` (a rebound page still sends ``Host: evil.example``);
- be same-origin when a browser sent it: no ``Origin``, an ``Origin`` equal to the server's own (scheme and
  ``Host``), or ``Sec-Fetch-Site: same-origin`` (a header pages cannot set; it keeps a dev server that proxies
  ``/api`` and rewrites ``Host`` — WeKnora's Vite proxy with ``changeOrigin`` — working);
- be a request a cross-origin page cannot send without a CORS preflight (JSON content type or a custom
  header), and the route answers no preflight (``knora.api.cors``), so no other origin gets that far.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

# Headers outside the CORS "simple" set that the UIs send: either one forces a preflight from another origin.
CUSTOM_HEADERS: tuple[str, ...] = ("x-request-id", "x-requested-with")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_name(host: str) -> str:
    """The name in a ``Host`` header value, without its port or IPv6 brackets, lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback(name: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _origin_key(scheme: str, host: str) -> tuple[str, str, int | None]:
    parts = urlsplit(f"{scheme}://{host}")
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or ""), port or _DEFAULT_PORTS.get(scheme)


def is_same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether an ``Origin`` header names the server the request reached (``scheme`` and ``Host``)."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or parts.path not in ("", "/"):
        return False
    return _origin_key(parts.scheme, parts.netloc) == _origin_key(scheme.lower(), host.lower())


def is_preflighted(headers: Mapping[str, str]) -> bool:
    """Whether a browser would have needed a CORS preflight to send this request from another origin."""
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media_type == "application/json" or any(h in headers for h in CUSTOM_HEADERS)


def auto_setup_refusal(headers: Mapping[str, str], scheme: str, client_host: str) -> str | None:
    """Why this request may not be handed a key, or None when it comes from Knora's own UI on this machine.

    ``headers`` must look names up case-insensitively (Starlette's ``Headers`` does)."""
    if not (is_loopback(client_host) or client_host == "testclient"):  # Starlette's TestClient
        return "Auto-setup is only available from this machine; use an API key"
    host = headers.get("host", "")
    if not is_loopback(host_name(host)):
        return "Auto-setup needs a loopback host name (localhost or 127.0.0.1); use an API key"
    origin = headers.get("origin")
    if origin is not None and not is_same_origin(origin, scheme, host) \
            and headers.get("sec-fetch-site") != "same-origin":
        return "Auto-setup is refused to other origins; use an API key"
    if not is_preflighted(headers):
        return "Auto-setup needs a JSON request (Content-Type: application/json)"
    return None
