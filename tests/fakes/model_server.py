"""A fake OpenAI-compatible model server: a real HTTP server on 127.0.0.1 that the real clients talk to.

Why a real server and not a mocked client: the providers' job is to speak the wire protocol (SSE framing,
deltas split mid-word, tool-call arguments in pieces, error statuses, usage chunks). Only a socket exercises
all of that.

Usage::

    with FakeModelServer() as fake:            # or: async with FakeModelServer() as fake:
        fake.script([Reply(content="Hi <ref id=\"c1\"/>", chunk_size=3), Reply(tool_calls=[...])])
        client = AsyncOpenAI(base_url=fake.base_url, api_key="x")
        ...
        fake.requests                           # every request body received, in order

Chat replies are taken one per ``/v1/chat/completions`` request from the script; when it is empty,
``fake.handler(body)`` is asked (if set); otherwise the reply echoes the last user message.
``fake.token_rate`` (chunks per second) throttles every stream, for benchmarks that want a model speed.
``fake.disconnects`` records (``time.monotonic()``) each time a client closed a chat request's connection
before its reply was finished — while the server waited (``delay``, ``delay_per_chunk``) or wrote — so a
test can assert that a stopped turn really closed the model request, and when.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeModelServer", "Reply", "fake_embedding", "lexical_score"]


@dataclass
class Reply:
    """One scripted chat completion."""

    content: str = ""
    reasoning_content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name", "arguments", "id"?}]
    finish_reason: str | None = None  # default: "tool_calls" when tool_calls, else "stop"
    chunk_size: int = 4  # characters per streamed delta
    delay: float = 0.0  # seconds before the first byte
    delay_per_chunk: float = 0.0  # seconds between streamed chunks
    status: int = 200  # != 200 → an OpenAI-style error body
    error: str = ""
    think_tags: bool = False  # put reasoning inside <think>…</think> in content instead of reasoning_content
    abort_after_chunks: int | None = None  # stream: drop the connection after this many chunks
    usage: dict[str, int] | None = None  # override the computed usage
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers, e.g. Retry-After
    stall_after_chunks: int | None = None  # stream: go silent for ``stall`` seconds after this many chunks
    stall: float = 0.0


def _tokens(text: str) -> list[str]:
    text = text.lower()
    words = re.findall(r"[a-z0-9]+", text)
    cjk = [c for c in text if "\u4e00" <= c <= "\u9fff"]
    bigrams = [a + b for a, b in itertools.pairwise(cjk)]
    return words + cjk + bigrams


def fake_embedding(text: str, dimension: int = 64) -> list[float]:
    """Deterministic, L2-normalised feature-hashing vector: similar texts get similar vectors."""
    vec = [0.0] * dimension
    toks = _tokens(text) or [text]
    for tok in toks:
        digest = hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dimension
        sign = 1.0 if digest[4] & 1 else -1.0
        vec[slot] += sign
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def lexical_score(query: str, document: str) -> float:
    """Share of query tokens present in the document, in [0, 1] — the fake reranker's relevance."""
    q = set(_tokens(query))
    if not q:
        return 0.0
    d = set(_tokens(document))
    return len(q & d) / len(q)


def _split(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    # --- plumbing -------------------------------------------------------------------------------------------
    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            parsed = {"_raw": raw.decode("utf-8", "replace")}
        return parsed if isinstance(parsed, dict) else {"_body": parsed}

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _client_gone(self) -> bool:
        """The client closed (or reset) the connection. It sends nothing more on it while waiting for a reply,
        so a readable socket means end-of-file."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _pause(self, seconds: float) -> bool:
        """Sleep like a slow model, watching the connection: ``False`` (and the disconnect recorded) as soon
        as the client hangs up, so a stalled reply does not outlive the request."""
        end = time.monotonic() + seconds
        while True:
            if self._client_gone():
                self._hung_up()
                return False
            left = end - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(0.02, left))

    def _hung_up(self) -> None:
        self.close_connection = True
        self.server.fake._disconnected()

    # --- routes ---------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]})
            return
        if self.path.rstrip("/").endswith("/api/version"):  # Ollama's version
            self._json(200, {"version": "0.0.0-fake"})
            return
        if self.path.rstrip("/").endswith("/api/tags"):  # Ollama's model list
            self._json(200, {"models": [{"name": m} for m in fake.models]})
            return
        self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        body = self._body()
        path = self.path.split("?", 1)[0].rstrip("/")
        fake._record(path, body, {k.lower(): v for k, v in self.headers.items()})
        if path.endswith("/chat/completions"):
            self._chat(body, fake._next_reply(body))
        elif path == "/api/chat":
            self._ollama_chat(body, fake._next_reply(body))
        elif path.endswith("/embeddings"):
            self._embeddings(body)
        elif path.endswith("/rerank"):
            self._rerank(body)
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def _embeddings(self, body: dict[str, Any]) -> None:
        fake = self.server.fake
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        dim = int(body.get("dimensions") or fake.embedding_dimension)
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dim)}
                for i, t in enumerate(texts)]
        n = sum(len(t) for t in texts)
        self._json(200, {"object": "list", "data": data, "model": body.get("model", "fake-embed"),
                         "usage": {"prompt_tokens": n, "total_tokens": n}})

    def _rerank(self, body: dict[str, Any]) -> None:
        fake = self.server.fake
        query = str(body.get("query", ""))
        tei = "texts" in body and "documents" not in body
        raw_docs = body.get("texts") if tei else body.get("documents", [])
        docs = [d.get("text", "") if isinstance(d, dict) else str(d) for d in (raw_docs or [])]
        if fake.rerank_status != 200:
            self._json(fake.rerank_status, {"error": {"message": "rerank failed", "type": "server_error"}})
            return
        scorer = fake.rerank_scorer or lexical_score
        scored = sorted(((i, float(scorer(query, d))) for i, d in enumerate(docs)), key=lambda p: -p[1])
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n > 0:
            scored = scored[:top_n]
        if tei:
            self._json(200, [{"index": i, "score": s} for i, s in scored])
            return
        results = [{"index": i, "relevance_score": s, "document": {"text": docs[i]}} for i, s in scored]
        self._json(200, {"model": body.get("model", "fake-rerank"), "results": results,
                         "usage": {"total_tokens": sum(len(d) for d in docs)}})

    def _ollama_chat(self, body: dict[str, Any], reply: Reply) -> None:
        """Ollama's native NDJSON protocol: whole tool calls, ``thinking`` field, ``done`` line with
        counts."""
        if reply.delay and not self._pause(reply.delay):
            return
        if reply.status != 200:
            self._json(reply.status, {"error": reply.error or f"fake error {reply.status}"}, reply.headers)
            return
        model = str(body.get("model", "fake-chat"))
        content, thinking = reply.content, reply.reasoning_content
        if reply.think_tags and thinking:
            content, thinking = f"<think>{thinking}</think>{content}", ""
        calls = [{"function": {"name": c["name"], "arguments": json.loads(c["arguments"])
                               if isinstance(c.get("arguments"), str) else c.get("arguments", {})}}
                 for c in reply.tool_calls]
        done = {"model": model, "done": True, "done_reason": reply.finish_reason or "stop",
                "prompt_eval_count": 7, "eval_count": max(1, len(content) // 4)}
        if not body.get("stream", True):
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if thinking:
                message["thinking"] = thinking
            if calls:
                message["tool_calls"] = calls
            self._json(200, {**done, "message": message})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        lines = [{"model": model, "done": False, "message": {"role": "assistant", "content": "",
                                                             "thinking": p}}
                 for p in _split(thinking, reply.chunk_size)]
        lines += [{"model": model, "done": False, "message": {"role": "assistant", "content": p}}
                  for p in _split(content, reply.chunk_size)]
        if calls:
            lines.append({"model": model, "done": False,
                          "message": {"role": "assistant", "content": "", "tool_calls": calls}})
        lines.append({**done, "message": {"role": "assistant", "content": ""}})
        try:
            for n, payload in enumerate(lines):
                if reply.delay_per_chunk and not self._pause(reply.delay_per_chunk):
                    return
                if n == reply.stall_after_chunks and not self._pause(reply.stall):
                    return
                self._chunk((json.dumps(payload, ensure_ascii=False) + "\n").encode())
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self._hung_up()

    def _chat(self, body: dict[str, Any], reply: Reply) -> None:
        fake = self.server.fake
        if reply.delay and not self._pause(reply.delay):
            return
        if reply.status != 200:
            kind = "server_error" if reply.status >= 500 else "invalid_request"
            self._json(reply.status, {"error": {"message": reply.error or f"fake error {reply.status}",
                                                "type": kind, "code": reply.status}}, reply.headers)
            return
        model = str(body.get("model", "fake-chat"))
        content = reply.content
        reasoning = reply.reasoning_content
        if reply.think_tags and reasoning:
            content, reasoning = f"<think>{reasoning}</think>{content}", ""
        calls = [{"id": c.get("id") or f"call_{uuid.uuid4().hex[:12]}", "name": c["name"],
                  "arguments": c["arguments"] if isinstance(c.get("arguments"), str)
                  else json.dumps(c.get("arguments", {}), ensure_ascii=False)} for c in reply.tool_calls]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        usage = reply.usage or {"prompt_tokens": max(1, prompt_chars // 4),
                                "completion_tokens": max(1, (len(content) + len(reasoning)) // 4),
                                "total_tokens": 0}
        usage.setdefault("total_tokens", 0)
        if not usage["total_tokens"]:
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        cid = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if reasoning:
                message["reasoning_content"] = reasoning
            if calls:
                message["tool_calls"] = [{"id": c["id"], "type": "function",
                                          "function": {"name": c["name"],
                                                       "arguments": c["arguments"]}} for c in calls]
            self._json(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                             "model": model,
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                             "usage": usage})
            return
        self._stream(body, reply, cid, model, content, reasoning, calls, finish, usage, fake)

    def _stream(self, body: dict[str, Any], reply: Reply, cid: str, model: str, content: str, reasoning: str,
                calls: list[dict[str, Any]], finish: str, usage: dict[str, int],
                fake: FakeModelServer) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        created = int(time.time())
        pause = reply.delay_per_chunk or (1.0 / fake.token_rate if fake.token_rate else 0.0)

        def frame(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        frames: list[dict[str, Any]] = [frame({"role": "assistant", "content": ""})]
        frames += [frame({"reasoning_content": piece}) for piece in _split(reasoning, reply.chunk_size)]
        frames += [frame({"content": piece}) for piece in _split(content, reply.chunk_size)]
        for index, call in enumerate(calls):
            frames.append(frame({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["name"], "arguments": ""}}]}))
            for piece in _split(call["arguments"], reply.chunk_size):
                frames.append(frame({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        frames.append(frame({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            frames.append({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                           "choices": [], "usage": usage})
        try:
            for n, payload in enumerate(frames):
                if reply.abort_after_chunks is not None and n >= reply.abort_after_chunks:
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                if n and pause and not self._pause(pause):
                    return
                if n == reply.stall_after_chunks and not self._pause(reply.stall):
                    return
                self._chunk(f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode())
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):  # the client went away mid-stream
            self._hung_up()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeModelServer


class FakeModelServer:
    """Start on enter, stop on exit; safe to use from sync and async tests (it runs in its own thread)."""

    def __init__(self, *, models: Sequence[str] = ("fake-chat", "fake-embed", "fake-rerank"),
                 embedding_dimension: int = 64, token_rate: float | None = None) -> None:
        self.models = list(models)
        self.embedding_dimension = embedding_dimension
        self.token_rate = token_rate
        self.handler: Callable[[dict[str, Any]], Reply] | None = None
        self.rerank_scorer: Callable[[str, str], float] | None = None
        self.rerank_status = 200
        self.requests: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (path, body)
        self.headers: list[dict[str, str]] = []  # lower-cased header names
        self.disconnects: list[float] = []  # time.monotonic() of each reply the client hung up on
        # a chat request with image parts is answered by ``describe_images`` (before the script)
        self.describe_images = True
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- scripting ------------------------------------------------------------------------------------------
    def script(self, replies: Sequence[Reply]) -> FakeModelServer:
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [b for p, b in self.calls if p.endswith("/chat/completions") or p == "/api/chat"]

    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.calls.append((path, body))
            self.headers.append(headers)

    def disconnected_since(self, after: float) -> float | None:
        """Seconds from ``after`` (a ``time.monotonic()``) to the first hang-up seen since, or None."""
        with self._lock:
            seen = [t for t in self.disconnects if t >= after]
        return seen[0] - after if seen else None

    def _disconnected(self) -> None:
        with self._lock:
            self.disconnects.append(time.monotonic())

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if self.describe_images and (described := describe_images(body)) is not None:
            return Reply(content=described)
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.handler is not None:
            return self.handler(body)
        return Reply(content=_last_user_text(body))

    # --- lifecycle ------------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def start(self) -> FakeModelServer:
        if self._server is None:
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.fake = self
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="fake-model-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        import asyncio

        await asyncio.to_thread(self.stop)


_COLOURS = {"red": (220, 30, 30), "green": (30, 180, 60), "blue": (30, 60, 220), "yellow": (240, 220, 40),
            "white": (250, 250, 250), "black": (10, 10, 10), "grey": (128, 128, 128)}


def _image_of(url: str) -> str:
    """"a W×H image, mostly COLOUR" for a ``data:`` URL (Pillow decodes it), else "an image"."""
    import base64
    import io

    if not url.startswith("data:") or "," not in url:
        return "an image"
    try:
        from PIL import Image

        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as img:
            width, height = img.size
            rgb = img.convert("RGB").resize((1, 1)).getpixel((0, 0))
    except Exception:  # noqa: BLE001 - a fake: an undecodable image is still "an image"
        return "an undecodable image"
    assert isinstance(rgb, tuple)
    colour = min(_COLOURS, key=lambda c: sum((a - b) ** 2 for a, b in zip(_COLOURS[c], rgb, strict=True)))
    return f"a {width}x{height} pixel image, mostly {colour}"


def describe_images(body: dict[str, Any]) -> str | None:
    """The fake VLM: a request whose last user message has ``image_url`` parts is described by each image's
    size and main colour; asked for the query-understanding JSON (a system prompt naming
    ``image_description``), it answers that object. None when the request has no image."""
    messages = body.get("messages", [])
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    parts = last.get("content") if last else None
    if not isinstance(parts, list):
        return None
    urls = [str((p.get("image_url") or {}).get("url", "")) for p in parts
            if isinstance(p, dict) and p.get("type") == "image_url"]
    if not urls:
        return None
    described = "; ".join(_image_of(u) for u in urls)
    text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
    system = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    if "image_description" in system:
        lines = [ln.strip() for ln in text.split("<images_uploaded", 1)[0].splitlines() if ln.strip()]
        return json.dumps({"rewrite_query": lines[-1][:200] if lines else "", "intent": "kb_search",
                           "image_description": f"The picture shows {described}."}, ensure_ascii=False)
    return f"The picture shows {described}."


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # multimodal parts
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""
