"""A retrieval engine for tests and benchmarks that are not about retrieval: it records what it is given."""

from __future__ import annotations

from typing import Any


class RecordingRetrieval:
    """A retrieval engine that keeps the visible index state (``rows`` by source id) and the call log, so
    ingestion tests can assert what got indexed; with ``inner``, every write is forwarded to that engine
    too."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.rows: dict[str, Any] = {}
        self.calls: list[tuple[str, Any]] = []
        self.fail_next_index: Exception | None = None

    name = "recording"
    capabilities = frozenset({"vector", "keyword"})

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def index(self, rows: Any) -> None:
        if self.fail_next_index is not None:
            exc, self.fail_next_index = self.fail_next_index, None
            raise exc
        self.calls.append(("index", [r.source_id for r in rows]))
        if self.inner is not None:
            await self.inner.index(rows)
        for r in rows:
            self.rows[r.source_id] = r

    async def delete_chunks(self, chunk_ids: Any) -> None:
        self.calls.append(("delete_chunks", list(chunk_ids)))
        if self.inner is not None:
            await self.inner.delete_chunks(chunk_ids)
        for sid in [s for s, r in self.rows.items() if r.chunk_id in set(chunk_ids)]:
            del self.rows[sid]

    async def delete_knowledge(self, knowledge_ids: Any) -> None:
        self.calls.append(("delete_knowledge", list(knowledge_ids)))
        if self.inner is not None:
            await self.inner.delete_knowledge(knowledge_ids)
        for sid in [s for s, r in self.rows.items() if r.knowledge_id in set(knowledge_ids)]:
            del self.rows[sid]

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        self.calls.append(("delete_knowledge_base", knowledge_base_id))
        if self.inner is not None:
            await self.inner.delete_knowledge_base(knowledge_base_id)
        for sid in [s for s, r in self.rows.items() if r.knowledge_base_id == knowledge_base_id]:
            del self.rows[sid]

    async def set_enabled(self, chunk_ids: Any, enabled: bool) -> None:
        self.calls.append(("set_enabled", (list(chunk_ids), enabled)))
        if self.inner is not None:
            await self.inner.set_enabled(chunk_ids, enabled)
        for r in self.rows.values():
            if r.chunk_id in set(chunk_ids):
                r.is_enabled = enabled

    async def search(self, query: Any) -> Any:
        if self.inner is None:
            return []
        return await self.inner.search(query)
