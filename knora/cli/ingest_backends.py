"""Where ``knora ingest`` sends documents: the running server's API, or the ingestion service in this process.

Both answer the same five questions (``IngestBackend``), so the walk, the progress and the summary
(``knora.cli.ingest``) are one code path. A backend raises ``Abort`` when nothing more can be done (the server
went away); a refused document is a ``failed`` answer, and the run goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from knora.cli._common import find_kb, find_kb_json
from knora.domain.knowledge import PROGRESS_KEY, IngestProgress

if TYPE_CHECKING:
    from knora.cli.client import ApiClient
    from knora.root import Services

TERMINAL = frozenset({"completed", "failed", "cancelled"})
_BATCH = 200  # ids per GET /knowledge/batch (the route's cap)


def upload_name(source: Path) -> str:
    """The name a file is sent under: its folder and its name, so that the server lists a folder of READMEs
    as "socat/README", "gzip/README" … until each document's own title is known (the stored file name stays
    the last part)."""
    folder = source.absolute().parent.name
    return f"{folder}/{source.name}" if folder else source.name


class Abort(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Added:
    status: str  # pending | duplicate | failed
    knowledge_id: str = ""
    error: str = ""


@dataclass(frozen=True)
class DocState:
    status: str  # a ParseStatus value; "failed" for a document deleted while processing
    title: str = ""
    error: str = ""
    done_fraction: float | None = None  # a large document's embedding, while it runs (metadata.progress)


def done_fraction(metadata: object) -> float | None:
    """How far a large document's job is, from its metadata (``IngestProgress``); None when not reported."""
    raw = metadata.get(PROGRESS_KEY) if isinstance(metadata, dict) else None
    try:
        p = IngestProgress.model_validate(raw) if raw is not None else None
    except ValidationError:
        return None
    return p.done / p.total if p is not None and p.total else None


class IngestBackend(Protocol):
    def unfinished(self, count: int) -> str:
        """What becomes of ``count`` documents sent but not finished when the command is interrupted."""
        ...

    def on_wait(self, callback: Callable[[float], None]) -> None:
        """``callback(seconds)`` is called when the backend waits before it can go on (a rate limit)."""
        ...

    async def knowledge_base(self, name_or_id: str) -> tuple[str, str, bool]:
        """(id, name, created) of the knowledge base, created when missing."""
        ...

    async def extensions(self) -> frozenset[str]:
        """The file types the parsers take (``knora.domain.files.file_type`` values)."""
        ...

    async def add(self, kb_id: str, source: Path | str) -> Added: ...

    async def states(self, ids: Iterable[str]) -> dict[str, DocState]: ...

    async def chunk_count(self, knowledge_id: str) -> int: ...


class RemoteBackend:
    """The server's ``/api/v1`` routes, as the web UI uses them."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    def on_wait(self, callback: Callable[[float], None]) -> None:
        self.api.on_wait = callback

    def unfinished(self, count: int) -> str:
        return f"the server goes on processing the {count} document(s) already sent"

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        from knora.cli.client import ApiError

        try:
            return await self.api.data(method, path, **kwargs)
        except ApiError as exc:
            raise Abort(exc.message) from exc

    async def knowledge_base(self, name_or_id: str) -> tuple[str, str, bool]:
        found = find_kb_json(await self._call("GET", "/knowledge-bases"), name_or_id)
        created = found is None
        if found is None:
            found = await self._call("POST", "/knowledge-bases", json={"name": name_or_id})
        return str(found["id"]), str(found["name"]), created

    async def extensions(self) -> frozenset[str]:
        engines = await self._call("GET", "/system/parser-engines")
        return frozenset(t for e in engines if e.get("Available", True) for t in e.get("FileTypes") or [])

    async def add(self, kb_id: str, source: Path | str) -> Added:
        from knora.cli.client import ApiError

        try:
            if isinstance(source, str):
                r = await self.api.request("POST", f"/knowledge-bases/{kb_id}/knowledge/url", ok=(409,),
                                           json={"url": source, "channel": "api"})
            else:
                data = await asyncio.to_thread(source.read_bytes)
                r = await self.api.request("POST", f"/knowledge-bases/{kb_id}/knowledge/file", ok=(409,),
                                           files={"file": (source.name, data)},
                                           data={"channel": "api", "fileName": upload_name(source)})
        except OSError as exc:
            return Added("failed", error=str(exc))
        except ApiError as exc:
            if exc.status == 0:  # the server is gone: every further document would fail the same way
                raise Abort(exc.message) from exc
            return Added("failed", error=exc.message)
        k = r.json().get("data") or {}
        return Added("duplicate" if r.status_code == 409 else "pending", knowledge_id=str(k.get("id", "")))

    async def states(self, ids: Iterable[str]) -> dict[str, DocState]:
        wanted = list(ids)
        out: dict[str, DocState] = {}
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i:i + _BATCH]
            found = {k["id"]: k for k in await self._call("GET", "/knowledge/batch", params={"ids": part})}
            for kid in part:
                k = found.get(kid)
                out[kid] = (DocState("failed", error="deleted while processing") if k is None else
                            DocState(str(k.get("parse_status", "")), str(k.get("title") or ""),
                                     str(k.get("error_message") or ""), done_fraction(k.get("metadata"))))
        return out

    async def chunk_count(self, knowledge_id: str) -> int:
        from knora.cli.client import ApiError

        try:
            _items, total = await self.api.page(f"/chunks/{knowledge_id}", {"page": 1, "page_size": 1})
        except ApiError as exc:
            raise Abort(exc.message) from exc
        return total


class LocalBackend:
    """The ingestion service of services built in this process (no server running)."""

    def __init__(self, c: Services) -> None:
        self.c = c

    def on_wait(self, callback: Callable[[float], None]) -> None:
        pass  # nothing here waits

    def unfinished(self, count: int) -> str:
        return f"the {count} document(s) already sent are processed when Knora next runs (knora serve)"

    async def knowledge_base(self, name_or_id: str) -> tuple[str, str, bool]:
        from knora.domain.errors import AppError

        kb = await find_kb(self.c, name_or_id)
        if kb is not None:
            return kb.id, kb.name, False
        try:
            kb = await self.c.kb_service.create(self.c.default_tenant_id, {"name": name_or_id})
        except AppError as exc:
            raise Abort(exc.message) from exc
        return kb.id, kb.name, True

    async def extensions(self) -> frozenset[str]:
        return frozenset(self.c.parsers.extensions)

    async def add(self, kb_id: str, source: Path | str) -> Added:
        from knora.domain.errors import AppError
        from knora.services.ingest.service import DuplicateKnowledge

        tenant, ingest = self.c.default_tenant_id, self.c.ingest_service
        try:
            if isinstance(source, str):
                k = await ingest.add_url(tenant, kb_id, source)
            else:
                data = await asyncio.to_thread(source.read_bytes)
                k = await ingest.add_file(tenant, kb_id, upload_name(source), data, channel="api")
        except DuplicateKnowledge as exc:
            return Added("duplicate", knowledge_id=exc.existing.id)
        except AppError as exc:
            return Added("failed", error=exc.message)
        except OSError as exc:
            return Added("failed", error=str(exc))
        return Added("pending", knowledge_id=k.id)

    async def states(self, ids: Iterable[str]) -> dict[str, DocState]:
        out: dict[str, DocState] = {}
        for kid in ids:
            k = await self.c.repos.knowledge.get(None, kid)
            out[kid] = (DocState("failed", error="deleted while processing") if k is None
                        else DocState(str(k.parse_status), k.title, k.error_message,
                                      done_fraction(k.metadata)))
        return out

    async def chunk_count(self, knowledge_id: str) -> int:
        page = await self.c.repos.chunks.list(self.c.default_tenant_id, knowledge_id, page=1, page_size=1)
        return page.total
