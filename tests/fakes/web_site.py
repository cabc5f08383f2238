"""A real HTTP server on loopback that serves fixed pages: the far end of URL imports and fetch tools."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Page:
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


NOT_FOUND = Page(b"missing", "text/plain", 404)


def redirect(location: str) -> Page:
    return Page(b"", "text/plain", 302, {"Location": location})


@contextmanager
def serve(pages: Mapping[str, Page], *, default: Page = NOT_FOUND) -> Iterator[str]:
    """Serves ``pages`` by path (``default`` for any other path); yields the base URL, no trailing slash."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = pages.get(self.path, default)
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type)
            self.send_header("Content-Length", str(len(page.body)))
            for name, value in page.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(page.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
