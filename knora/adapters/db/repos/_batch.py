"""Coalescing of the small reads and writes many concurrent chat turns make (sessions and messages).

Every turn looks its session up, inserts its message pair, loads its history and completes its answer. Done
one by one, a thousand turns in flight mean thousands of short transactions queueing for a connection pool
(and, on SQLite, for its single writer) — the database, not the model, sets the pace. Here:

- ``BatchLoader``: single-key reads awaited meanwhile are answered by one ``WHERE key IN (…)`` query; while a
  query runs, the next keys gather for the one after it. Each caller still gets exactly its own row, read
  after every write it awaited before asking (a read starts after it is requested, never before).
- ``GroupCommit``: one writer task runs every write queued meanwhile in a single transaction. Writes made of
  parameterised statements (``Write``) with the same statement are sent as one ``executemany``; each caller's
  ``await`` returns once the transaction holding its write has committed, so nothing a caller was told is
  saved can be lost by a crash. If the group's transaction fails, each caller's writes are retried in a
  transaction of their own, so one bad write fails alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.sql import Executable

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Op = Callable[[AsyncSession], Awaitable[Any]]


class BatchLoader(Generic[K, V]):
    """``await load(key)`` → the value ``fetch`` found for it (or None); concurrent loads share one
    ``fetch``."""

    def __init__(self, fetch: Callable[[list[K]], Awaitable[dict[K, V]]], max_batch: int = 500) -> None:
        self._fetch = fetch
        self._max_batch = max_batch
        self._waiting: dict[K, list[asyncio.Future[V | None]]] = {}
        self._task: asyncio.Task[None] | None = None

    async def load(self, key: K) -> V | None:
        fut: asyncio.Future[V | None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(fut)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="knora-batch-loader")
        return await fut  # each caller has its own future: a cancelled caller cancels no read others share

    async def _run(self) -> None:
        await asyncio.sleep(0)  # let the loads requested in this loop iteration join the first query
        while self._waiting:
            keys = list(self._waiting)[:self._max_batch]
            futures = {k: self._waiting.pop(k) for k in keys}
            try:
                found = await self._fetch(keys)
            except Exception as exc:  # noqa: BLE001 - handed to every caller of this batch
                for futs in futures.values():
                    for f in futs:
                        if not f.done():
                            f.set_exception(exc)
                continue
            for k, futs in futures.items():
                value = found.get(k)
                for f in futs:
                    if not f.done():
                        f.set_result(value)


@dataclass(frozen=True)
class Write:
    """One parameterised statement of a write; ``key`` names the statement, so equal keys are one executemany.

    ``targets`` are the rows the statement changes: two writes of the same row keep their order even when
    another statement comes between them.
    """

    key: str
    statement: Executable
    params: dict[str, Any]
    targets: tuple[str, ...] = ()


@dataclass
class _Pending:
    writes: Sequence[Write] | None
    op: Op | None
    future: asyncio.Future[Any] = field(repr=False)


@dataclass
class _Group:
    key: str
    statement: Executable
    params: list[dict[str, Any]] = field(default_factory=list)


def _plan(items: Iterable[_Pending]) -> list[_Group | _Pending]:
    """The batch's statements in queue order, equal statements merged unless a row in between forbids it."""
    plan: list[_Group | _Pending] = []
    open_groups: dict[str, int] = {}  # statement key -> index in plan of its newest group
    touched: dict[str, int] = {}  # row -> index in plan of the last group that writes it
    for item in items:
        if item.op is not None:
            plan.append(item)
            open_groups.clear()  # an opaque op may touch anything: nothing merges across it
            continue
        for w in item.writes or ():
            at = open_groups.get(w.key)
            if at is not None:
                for t in w.targets:
                    # a later group writes this row: merging would reorder the two
                    if touched.get(t, -1) > at:
                        at = None
                        break
            if at is None:
                plan.append(_Group(w.key, w.statement))
                at = open_groups[w.key] = len(plan) - 1
            group = plan[at]
            assert isinstance(group, _Group)
            group.params.append(w.params)
            for t in w.targets:
                touched[t] = max(touched.get(t, -1), at)
    return plan


class GroupCommit:
    def __init__(self, sessions: async_sessionmaker[AsyncSession] | Any, max_batch: int = 500) -> None:
        self._sessions = sessions
        self._max_batch = max_batch
        self._queue: list[_Pending] = []
        self._task: asyncio.Task[None] | None = None
        self.transactions = 0  # committed group transactions (for tests and benchmarks)

    async def write(self, writes: Sequence[Write]) -> None:
        """Runs the statements in one transaction (shared with other callers'); returns once it committed."""
        await self._submit(_Pending(writes, None, asyncio.get_running_loop().create_future()))

    async def run(self, op: Op) -> Any:
        """Runs ``op(session)`` inside a group transaction; returns its result once the transaction
        committed."""
        return await self._submit(_Pending(None, op, asyncio.get_running_loop().create_future()))

    async def _submit(self, item: _Pending) -> Any:
        self._queue.append(item)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._writer(), name="knora-group-commit")
        return await item.future  # the caller's own future: a cancelled caller's write still commits

    async def _writer(self) -> None:
        await asyncio.sleep(0)  # writes requested in this loop iteration join the first transaction
        while self._queue:
            batch, self._queue = self._queue[:self._max_batch], self._queue[self._max_batch:]
            try:
                results = await self._commit(batch)
            except Exception:  # noqa: BLE001 - isolate the failing write, the others still commit
                for item in batch:
                    try:
                        result = (await self._commit([item]))[0]
                    except Exception as exc:  # noqa: BLE001 - handed to that write's caller
                        if not item.future.done():
                            item.future.set_exception(exc)
                    else:
                        if not item.future.done():
                            item.future.set_result(result)
            else:
                for item, result in zip(batch, results, strict=True):
                    if not item.future.done():
                        item.future.set_result(result)

    async def _commit(self, batch: list[_Pending]) -> list[Any]:
        results: dict[int, Any] = {}
        async with self._sessions.begin() as s:
            for step in _plan(batch):
                if isinstance(step, _Group):
                    await s.execute(step.statement, step.params if len(step.params) > 1 else step.params[0])
                else:
                    assert step.op is not None
                    results[id(step)] = await step.op(s)
        self.transactions += 1
        return [results.get(id(item)) for item in batch]

    async def close(self) -> None:
        """Waits for every queued write (the writer task ends by itself once the queue is empty)."""
        while self._task is not None and not self._task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._task)
