"""Coalesced reads and group commits of the session and message repositories, on SQLite and PostgreSQL.

What the streaming area relies on: many concurrent turns share a few queries and transactions, yet every
caller gets exactly its own rows, sees what it wrote before, and a write that fails (here: a message of a
session that does not exist) fails alone while the others in its transaction still commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from knora.adapters.db.repos._batch import BatchLoader, GroupCommit
from knora.domain.common import utcnow
from knora.domain.conversation import Message
from knora.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
async def c(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    from tests.conftest import RECORDING, started

    async with started(make_settings(database_url=db_url), RECORDING) as container:
        yield container


class StatementLog:
    def __init__(self, engine: Any) -> None:
        self.statements: list[str] = []
        self._engine = engine.sync_engine
        event.listen(self._engine, "before_cursor_execute", self._record)

    def _record(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.statements.append(" ".join(statement.split()).lower())

    def count(self, prefix: str) -> int:
        return sum(s.startswith(prefix) for s in self.statements)

    def close(self) -> None:
        event.remove(self._engine, "before_cursor_execute", self._record)


async def one_turn(c: Any) -> Message:
    """A session with one saved turn; its assistant message."""
    s = await c.session_service.create(c.default_tenant_id)
    u, a = pair(s.id, c.default_tenant_id, "r")
    await c.session_service.messages.create_pair(u, a)
    return a


def pair(sid: str, tenant: int, request_id: str, query: str = "q", answer: str = "",
         at: Any = None) -> tuple[Message, Message]:
    at = at or utcnow()
    return (Message(session_id=sid, tenant_id=tenant, request_id=request_id, role="user", content=query,
                    is_completed=True, created_at=at, updated_at=at),
            Message(session_id=sid, tenant_id=tenant, request_id=request_id, role="assistant", content=answer,
                    is_completed=False, created_at=at, updated_at=at))


async def test_concurrent_session_lookups_share_one_query(c: Any) -> None:
    svc = c.session_service
    tenant = c.default_tenant_id
    sessions = [await svc.create(tenant, title=f"s{i}") for i in range(40)]
    log = StatementLog(c.db)
    try:
        found = await asyncio.gather(*(svc.sessions.get(tenant, s.id) for s in sessions),
                                     svc.sessions.get(tenant + 999, sessions[0].id),  # another tenant's
                                     svc.sessions.get(tenant, "00000000-0000-0000-0000-000000000000"))
    finally:
        log.close()
    assert [s.title for s in found[:40] if s is not None] == [f"s{i}" for i in range(40)]
    assert found[40] is None
    assert found[41] is None
    assert log.count("select") == 1


async def test_turn_writes_of_many_turns_share_few_transactions(c: Any) -> None:
    svc = c.session_service
    tenant = c.default_tenant_id
    sessions = [await svc.create(tenant) for _ in range(30)]
    writer = svc.messages._writes
    before = writer.transactions
    pairs = [pair(s.id, tenant, f"r{i}") for i, s in enumerate(sessions)]
    await asyncio.gather(*(svc.messages.create_pair(u, a, {"last_request_state": {"n": i}})
                           for i, (u, a) in enumerate(pairs)))
    assert writer.transactions - before <= 2
    await asyncio.gather(*(svc.messages.complete(a.id, {"content": f"answer {i}", "is_completed": True,
                                                        "knowledge_references": [{"id": f"k{i}"}]},
                                                 user_message_id=u.id,
                                                 user_fields={"rendered_content": f"r{i}"})
                           for i, (u, a) in enumerate(pairs)))
    assert writer.transactions - before <= 4
    for i, (s, (u, a)) in enumerate(zip(sessions, pairs, strict=True)):
        saved = await svc.get_message(tenant, a.id)
        assert saved is not None
        assert saved.is_completed
        assert saved.content == f"answer {i}"
        assert saved.knowledge_references == [{"id": f"k{i}"}]
        user = await svc.get_message(tenant, u.id)
        assert user is not None
        assert user.rendered_content == f"r{i}"
        assert (await svc.get(tenant, s.id)).last_request_state == {"n": i}


async def test_a_failing_write_fails_alone(c: Any) -> None:
    svc = c.session_service
    tenant = c.default_tenant_id
    good = [await svc.create(tenant) for _ in range(5)]
    bad = pair("11111111-1111-1111-1111-111111111111", tenant, "bad")  # no such session: a foreign key error
    results = await asyncio.gather(*(svc.messages.create_pair(*pair(s.id, tenant, f"r{i}"))
                                     for i, s in enumerate(good)),
                                   svc.messages.create_pair(*bad), return_exceptions=True)
    assert all(r is None for r in results[:5])
    assert isinstance(results[5], Exception)
    for s in good:
        assert len(await svc.messages.recent(s.id, 10)) == 2
    assert await svc.get_message(tenant, bad[1].id) is None


async def test_two_updates_of_one_message_keep_their_order(c: Any) -> None:
    svc, tenant = c.session_service, c.default_tenant_id
    a = await one_turn(c)
    # Different column sets between two writes of the same row: they must not be merged past each other.
    await asyncio.gather(svc.messages.complete(a.id, {"content": "first", "is_completed": False}),
                         svc.messages.complete(a.id, {"is_fallback": True}),
                         svc.messages.complete(a.id, {"content": "second", "is_completed": True}))
    saved = await svc.get_message(tenant, a.id)
    assert saved is not None
    assert saved.content == "second"
    assert saved.is_completed
    assert saved.is_fallback


async def test_batched_history_equals_one_session_at_a_time(c: Any) -> None:
    svc = c.session_service
    tenant = c.default_tenant_id
    sessions = [await svc.create(tenant) for _ in range(6)]
    now = utcnow()
    for n, s in enumerate(sessions):
        for i in range(n * 2):  # 0, 2, 4 … turns
            u, a = pair(s.id, tenant, f"{s.id}-{i}", f"q{i}", f"a{i}", at=now - timedelta(minutes=100 - i))
            await svc.messages.create_pair(u, a)
    far = now + timedelta(days=1)  # with ``before``, recent() is the plain one-session query
    for limit in (0, 1, 3, 8, 50):
        batched = await asyncio.gather(*(svc.messages.recent(s.id, limit) for s in sessions))
        for s, got in zip(sessions, batched, strict=True):
            want = await svc.messages.recent(s.id, limit, before=far)
            assert [(m.id, m.role) for m in got] == [(m.id, m.role) for m in want]
    histories = await asyncio.gather(*(svc.history(s.id, 3) for s in sessions))
    assert [len(h) for h in histories] == [0, 2, 3, 3, 3, 3]
    assert [t.query for t in histories[5]] == ["q7", "q8", "q9"]


async def test_a_read_sees_every_write_awaited_before_it(c: Any) -> None:
    svc, tenant = c.session_service, c.default_tenant_id
    a = await one_turn(c)
    for i in range(5):
        await svc.messages.complete(a.id, {"content": f"v{i}"})
        got = await svc.get_message(tenant, a.id)
        assert got is not None
        assert got.content == f"v{i}"


async def test_title_is_set_once_through_the_writer(c: Any) -> None:
    svc = c.session_service
    tenant = c.default_tenant_id
    s = await svc.create(tenant)
    results = await asyncio.gather(*(svc.sessions.set_title_if_empty(tenant, s.id,
                                                                     f"t{i}") for i in range(5)))
    assert results.count(True) == 1
    assert (await svc.get(tenant, s.id)).title == f"t{results.index(True)}"


async def test_a_cancelled_caller_does_not_cancel_the_shared_write(c: Any) -> None:
    svc = c.session_service
    tenant = c.default_tenant_id
    sessions = [await svc.create(tenant) for _ in range(3)]
    pairs = [pair(s.id, tenant, "r") for s in sessions]
    tasks = [asyncio.create_task(svc.messages.create_pair(u, a)) for u, a in pairs]
    await asyncio.sleep(0)
    tasks[0].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await svc.messages._writes.close()  # waits for the queued writes
    for _u, a in pairs:
        assert await svc.get_message(tenant, a.id) is not None


async def test_loader_hands_a_failed_fetch_to_each_caller_and_recovers() -> None:
    calls: list[list[int]] = []

    async def fetch(keys: list[int]) -> dict[int, str]:
        calls.append(keys)
        if len(calls) == 1:
            raise RuntimeError("down")
        return {k: str(k) for k in keys}

    loader: BatchLoader[int, str] = BatchLoader(fetch)
    first = await asyncio.gather(*(loader.load(k) for k in (1, 2, 2)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in first)
    assert await asyncio.gather(*(loader.load(k) for k in (1, 2, 3))) == ["1", "2", "3"]
    assert calls == [[1, 2], [1, 2, 3]]


async def test_group_commit_close_waits_for_queued_writes(c: Any) -> None:
    writer = GroupCommit(c.sessions)
    svc = c.session_service
    tenant = c.default_tenant_id
    s = await svc.create(tenant)
    done: list[int] = []

    async def op(_session: Any) -> int:
        done.append(1)
        return 7

    task = asyncio.create_task(writer.run(op))
    await asyncio.sleep(0)
    await writer.close()
    assert await task == 7
    assert done == [1]
    assert (await svc.get(tenant, s.id)).id == s.id


async def test_history_leaves_out_the_excluded_request_but_still_counts_it(c: Any) -> None:
    """``history`` = ``recent`` minus the turn's own request and rows without one; the excluded rows still
    take their place among the last ``limit``, and two turns of one session asking at once each skip only
    their own."""
    svc = c.session_service
    tenant = c.default_tenant_id
    s = await svc.create(tenant)
    now = utcnow()
    for i in range(4):
        u, a = pair(s.id, tenant, f"r{i}", f"q{i}", f"a{i}", at=now - timedelta(minutes=10 - i))
        await svc.messages.create_pair(u, a)
    await svc.messages.create(Message(session_id=s.id, tenant_id=tenant, role="user", content="no request",
                                      created_at=now - timedelta(minutes=1)))
    for limit in (3, 4, 9, 20):
        want = [m for m in await svc.messages.recent(s.id, limit) if m.request_id not in ("", "r3")]
        got = await svc.messages.history(s.id, limit, "r3")
        assert [(m.request_id, m.role, m.content) for m in got] == [(m.request_id, m.role, m.content)
                                                                   for m in want]
        assert all(g.created_at == w.created_at and g.created_at.tzinfo is not None
                   for g, w in zip(got, want, strict=False))
    # the last 6: r1 (assistant), r2, r3 and the row without a request (newest)
    assert [m.request_id for m in await svc.messages.history(s.id, 6, "r3")] == ["r1", "r2", "r2"]
    mine, theirs = await asyncio.gather(svc.messages.history(s.id, 20, "r3"), svc.messages.history(s.id, 20,
                                                                                                   "r2"))
    assert "r3" not in {m.request_id for m in mine}
    assert "r2" in {m.request_id for m in mine}
    assert "r2" not in {m.request_id for m in theirs}
    assert "r3" in {m.request_id for m in theirs}
    turns = await svc.history(s.id, 5, exclude_request_id="r3")
    assert [(t.query, t.answer) for t in turns] == [("q0", "a0"), ("q1", "a1"), ("q2", "a2")]


async def test_a_cancelled_loader_caller_does_not_cancel_the_shared_read() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def fetch(keys: list[int]) -> dict[int, str]:
        started.set()
        await release.wait()
        return {k: str(k) for k in keys}

    loader: BatchLoader[int, str] = BatchLoader(fetch)
    gone, kept, other = (asyncio.create_task(loader.load(k)) for k in (1, 1, 2))
    await started.wait()
    gone.cancel()
    await asyncio.sleep(0)
    release.set()
    assert await kept == "1"
    assert await other == "2"
    assert gone.cancelled()
    assert await loader.load(1) == "1"  # the loader goes on serving


async def test_group_plan_merges_equal_statements_unless_a_row_in_between_forbids_it() -> None:
    from sqlalchemy import text

    from knora.adapters.db.repos._batch import Write, _Group, _Pending, _plan

    def item(*writes: tuple[str, str]) -> _Pending:
        return _Pending([Write(key, text("select 1"), {"row": row}, (row,)) for key, row in writes], None,
                        asyncio.get_running_loop().create_future())

    plan = _plan([item(("ins", "a"), ("ins", "b"), ("upd", "s")), item(("ins", "c"), ("upd", "t")),
                  item(("upd", "a")), item(("ins", "a"), ("ins", "d"))])
    # "ins a" again comes after "upd a": it may not join the first insert group (it would run before the
    # update), while "ins d", whose row nothing in between wrote, may — but only into the newest insert group.
    assert [(g.key, [p["row"] for p in g.params]) for g in plan if isinstance(g, _Group)] == [
        ("ins", ["a", "b", "c"]), ("upd", ["s", "t", "a"]), ("ins", ["a", "d"])]
