"""A tiny real embedding server (stdlib http.server on 127.0.0.1) speaking OpenAI's and Ollama's embedding
APIs.

Separate from ``tests/fakes/model_server.py`` because these tests need failure injection (the first N requests
answer with a chosen status) to exercise the retry policy, and Ollama's ``/api/embed``.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


def server_vector(text: str, dim: int) -> list[float]:
    """Unnormalised bag-of-words hashing vector: the adapters must normalise it themselves."""
    vec = [0.0] * dim
    for word in text.lower().split():
        vec[zlib.crc32(word.encode()) % dim] += 3.0
    return vec


@dataclass
class EmbedServer:
    dim: int = 48
    fail_first: int = 0
    fail_status: int = 503
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_failure(self) -> bool:
        with self.lock:
            if self.fail_first > 0:
                self.fail_first -= 1
                return True
            return False


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        state: EmbedServer = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        with state.lock:
            state.requests.append((self.path, body))
        if state.take_failure():
            self._send(state.fail_status, {"error": {"message": "injected failure", "type": "server_error"}})
            return
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if self.path == "/v1/embeddings":
            data = [{"object": "embedding", "index": i, "embedding": server_vector(t, state.dim)}
                    for i, t in enumerate(texts)]
            self._send(200, {"object": "list", "data": list(reversed(data)), "model": body.get("model"),
                             "usage": {"prompt_tokens": 1, "total_tokens": 1}})
        elif self.path == "/api/embed":
            self._send(200, {"model": body.get("model"),
                             "embeddings": [server_vector(t, state.dim) for t in texts]})
        else:
            self._send(404, {"error": "not found"})


@pytest.fixture(scope="session")
def minilm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX export per test session: exporting takes a few CPU-seconds, so tests share the cache."""
    return tmp_path_factory.mktemp("minilm-models")


@pytest.fixture
def embed_server() -> Iterator[EmbedServer]:
    state = EmbedServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.state = state  # type: ignore[attr-defined]
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
