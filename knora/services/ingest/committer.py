"""Commits finished documents in groups: one index call, one database transaction, one clean-up per group.

Documents finish embedding one after another; committing each on its own would cost a transaction (and an
fsync and a turn at SQLite's single write lock) per document and make the database, not the embedder, the
bottleneck. Jobs hand their result here and wait; a single committer task takes everything that is waiting and
commits it together. If a group fails, its documents are retried one by one, so one bad document fails alone.

Order inside a commit (see service.py): rows go into the retrieval index first, then the chunk rows and the
``completed`` status are swapped in by one transaction — the moment a document becomes searchable — and then
the rows of the replaced chunks leave the index.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from knora.domain.knowledge import Chunk
from knora.domain.search import IndexRow
from knora.ports.retrieval import RetrievalEngine
from knora.ports.store import ChunkRepo


@dataclass
class _Pending:
    knowledge_id: str
    chunks: Sequence[Chunk]
    rows: Sequence[IndexRow]
    complete: dict[str, Any]
    future: asyncio.Future[bool] = field(repr=False)


class GroupCommitter:
    def __init__(self, chunks_repo: ChunkRepo, retrieval: Callable[[], RetrievalEngine | None],
                 max_docs: int = 64) -> None:
        self._repo = chunks_repo
        self._retrieval = retrieval
        self._max = max(1, max_docs)
        self._queue: deque[_Pending] = deque()
        self._runner: asyncio.Task[None] | None = None

    async def commit(self, knowledge_id: str, chunks: Sequence[Chunk], rows: Sequence[IndexRow],
                     complete: dict[str, Any]) -> bool:
        """True once committed; False if the document was deleted meanwhile; raises if its commit failed."""
        p = _Pending(knowledge_id, chunks, rows, complete, asyncio.get_running_loop().create_future())
        self._queue.append(p)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        return await asyncio.shield(p.future)

    async def _run(self) -> None:
        while self._queue:
            group = [self._queue.popleft() for _ in range(min(self._max, len(self._queue)))]
            try:
                await self._commit(group)
            except Exception as exc:  # noqa: BLE001 - isolate the failing document
                if len(group) == 1:
                    _fail(group[0], exc)
                    continue
                for p in group:
                    try:
                        await self._commit([p])
                    except Exception as one:  # noqa: BLE001
                        _fail(p, one)

    async def _commit(self, group: list[_Pending]) -> None:
        engine = self._retrieval()
        rows = [r for p in group for r in p.rows]
        if engine is not None and rows:
            await engine.index(rows)
        try:
            olds = await self._repo.replace_many([(p.knowledge_id, p.chunks, p.complete) for p in group])
        except BaseException:
            if engine is not None and rows:
                await engine.delete_chunks(list({r.chunk_id for r in rows}))
            raise
        stale: list[str] = []
        for p in group:
            old = olds.get(p.knowledge_id)
            # deleted meanwhile → drop ours
            stale.extend({r.chunk_id for r in p.rows} if old is None else old)
        if engine is not None and stale:
            await engine.delete_chunks(stale)
        for p in group:
            if not p.future.done():
                p.future.set_result(olds.get(p.knowledge_id) is not None)


def _fail(p: _Pending, exc: BaseException) -> None:
    if not p.future.done():
        p.future.set_exception(exc)
