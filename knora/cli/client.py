"""The CLI's side of the HTTP API: which server to talk to, and a small client of its ``/api/v1`` routes.

A command asks ``find_server`` first: ``KNORA_URL`` when set (used as given: a server that does not answer is
an error, not a silent switch to in-process), else the server ``knora serve`` recorded in the data dir if it
is running (``knora.cli.discovery``), else None, and the command builds the engine in-process. The key sent is
``KNORA_API_KEY`` when set, else the data dir's ``cli.key`` — only to the server that wrote it.

Nothing here imports the engine (no ``knora.root``, models or SQLAlchemy): ``knora kb list`` against a running
server costs the interpreter, the settings and httpx (docs/cli.md).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knora.cli.discovery import live_record, read_key, read_record

if TYPE_CHECKING:
    import httpx

    from knora.settings import ClientSettings

MAX_RETRY_WAIT_S = 60.0  # the longest one Retry-After is honoured for
MAX_RETRIES = 30
# JSON bodies the server answers (not the SSE stream, whose frames arrive as they are written)
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Server:
    url: str
    key: str | None
    source: str  # how it was found, for the mode line: "KNORA_URL" or the discovery file's path


class ApiError(Exception):
    """A request the server refused (``status``) or could not be made (``status`` 0); ``message`` says why."""

    def __init__(self, message: str, status: int = 0, body: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body


def find_server(settings: ClientSettings) -> Server | None:
    data_dir = settings.data_dir
    if settings.url:
        record = read_record(data_dir)
        own = record is not None and record.url == settings.url
        return Server(settings.url, settings.api_key or (read_key(data_dir) if own else None), "KNORA_URL")
    record = live_record(data_dir)
    if record is None:
        return None
    return Server(record.url, settings.api_key or read_key(data_dir), str(data_dir / "server.json"))


def announce(server: Server | None, settings: ClientSettings, *, asked: bool = False) -> None:
    """The one stderr line saying where the command runs (``asked``: in-process because ``--in-process``)."""
    if server is None and asked:
        sys.stderr.write(f"knora: working in-process on {settings.data_dir} (--in-process)\n")
    elif server is None:
        sys.stderr.write(f"knora: no server running on {settings.data_dir}; working in-process (the engine "
                         "starts in this process)\n")
    else:
        sys.stderr.write(f"knora: using the server at {server.url}\n")
    sys.stderr.flush()


def error_message(body: object, fallback: str) -> str:
    """The message of an error body: the envelope's ``error`` (a string or ``{message}``), else
    ``message``, else FastAPI's ``detail``."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str) and err:
            return err
        for key in ("message", "detail"):
            if isinstance(body.get(key), str) and body[key]:
                return str(body[key])
    return fallback


class ApiClient:
    """``/api/v1`` of one server with one key. 429s are waited out (``Retry-After``); other 4xx/5xx and
    connection failures raise ``ApiError`` with the server's message."""

    def __init__(self, server: Server, *, on_wait: Callable[[float], None] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        import httpx

        self.server = server
        self.on_wait = on_wait
        headers = {"X-API-Key": server.key} if server.key else {}
        # certificates are loaded (tens of milliseconds) only for an https:// server
        self._http = httpx.AsyncClient(base_url=f"{server.url}/api/v1", headers=headers,
                                       timeout=httpx.Timeout(TIMEOUT_S, connect=10.0), transport=transport,
                                       verify=server.url.startswith("https://"))

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, *, ok: tuple[int, ...] = (), **kwargs: Any
                      ) -> httpx.Response:
        """The response; a status in ``ok`` is returned as it is, even an error status."""
        import httpx

        for _attempt in range(MAX_RETRIES):
            try:
                r = await self._http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                raise ApiError(self._unreachable(exc)) from exc
            if r.status_code == 429 and r.status_code not in ok:
                wait = _retry_after(r.headers)
                if self.on_wait is not None:
                    self.on_wait(wait)
                await asyncio.sleep(wait)
                continue
            if r.status_code < 400 or r.status_code in ok:
                return r
            raise self._refused(r)
        raise ApiError(f"the server kept refusing with 429 (rate limit) after {MAX_RETRIES} tries", 429)

    async def data(self, method: str, path: str, **kwargs: Any) -> Any:
        """The envelope's ``data``."""
        r = await self.request(method, path, **kwargs)
        return _json(r).get("data")

    async def page(self, path: str, params: Mapping[str, Any]) -> tuple[list[Any], int]:
        """(items, total) of a paged list route."""
        body = _json(await self.request("GET", path, params=dict(params)))
        items = body.get("data")
        return (items if isinstance(items, list) else []), int(body.get("total") or 0)

    @asynccontextmanager
    async def stream(self, method: str, path: str, body: object) -> AsyncIterator[httpx.Response]:
        """An open streaming response (SSE), no read timeout: an answer may think for long between frames,
        and the server sends keep-alive comments meanwhile."""
        import httpx

        request = self._http.build_request(method, path, json=body, timeout=httpx.Timeout(None, connect=10.0))
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ApiError(self._unreachable(exc)) from exc
        try:
            if response.status_code >= 400:
                await response.aread()
                raise self._refused(response)
            yield response
        finally:
            await response.aclose()

    async def lines(self, response: httpx.Response) -> AsyncIterator[str]:
        """The lines of a streaming response; a connection lost midway is an ``ApiError``."""
        import httpx

        try:
            async for line in response.aiter_lines():
                yield line
        except httpx.HTTPError as exc:
            raise ApiError(f"the connection to the server at {self.server.url} was lost: "
                           f"{exc or type(exc).__name__}") from exc

    def _unreachable(self, exc: Exception) -> str:
        named = self.server.source == "KNORA_URL"
        hint = " (KNORA_URL names it; unset KNORA_URL to work in-process)" if named else ""
        return f"cannot reach the Knora server at {self.server.url}: {exc or type(exc).__name__}{hint}"

    def _refused(self, r: httpx.Response) -> ApiError:
        try:
            body: object = r.json()
        except ValueError:
            body = None
        message = error_message(body, f"HTTP {r.status_code}")
        if r.status_code == 401:
            message += (" — set KNORA_API_KEY to a key of this server" if self.server.key
                        else " — no API key: set KNORA_API_KEY to a key of this server")
        return ApiError(message, r.status_code, body)


def _retry_after(headers: Mapping[str, str]) -> float:
    try:
        wait = float(headers.get("retry-after", "1"))
    except ValueError:
        wait = 1.0
    return min(max(wait, 0.05), MAX_RETRY_WAIT_S)


def _json(r: httpx.Response) -> dict[str, Any]:
    try:
        body = r.json()
    except ValueError as exc:
        raise ApiError(f"the server answered {r.status_code} with a body that is not JSON", r.status_code) \
            from exc
    if not isinstance(body, dict):
        raise ApiError("the server answered JSON that is not an object", r.status_code, body)
    return body


def _frame(data: list[str]) -> dict[str, Any] | None:
    try:
        frame = json.loads("\n".join(data))
    except ValueError as exc:
        raise ApiError(f"the server sent a stream frame that is not JSON: {data[0][:80]!r}") from exc
    return frame if isinstance(frame, dict) else None


async def sse_frames(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON frames of an SSE stream (``event:message`` / ``data:{…}`` / blank line; comments skipped)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            frame = _frame(data) if data else None
            data = []
            if frame is not None:
                yield frame
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    frame = _frame(data) if data else None
    if frame is not None:
        yield frame
