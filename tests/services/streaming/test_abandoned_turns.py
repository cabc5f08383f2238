"""Turns whose process died are closed by another, saving what the log holds; a live replica's are not
(issue 20, item 6c).

Three chat services share one database and one Redis prefix: A is abandoned mid-turn without any cleanup (as
``kill -9`` leaves it: no final write, no terminal entry, its lease no longer refreshed), B is a live replica
with a turn in progress, and C is the process that starts afterwards. C closes A's turn with the partial
answer its followers saw and ends A's log with an error then ``complete``; B's turn, whose lease B keeps
refreshing, is left running and ends normally.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from knora.adapters.stream.redis import RedisStreamLog
from knora.adapters.stream.redis_leases import RedisTurnLeases
from knora.adapters.stream.redis_stops import RedisStopSignals
from knora.domain.stream import StreamEvent
from knora.services.streaming.intake import ChatBody
from knora.services.streaming.service import ChatService
from knora.settings import Settings
from tests.conftest import REDIS_URL, started
from tests.polling import eventually
from tests.services.streaming.runners import EXPANDED, ScriptedRunner

pytestmark = [pytest.mark.integration, pytest.mark.redis, pytest.mark.timeout(90)]

LEASE_S = 3.0  # refreshed every second by a live owner: far above any event-loop lag of a loaded machine


def replica(c: Any, prefix: str, runner: ScriptedRunner) -> ChatService:
    return ChatService(c.session_service, RedisStreamLog(REDIS_URL, prefix=prefix),
                       RedisStopSignals(REDIS_URL, prefix=prefix), lambda _kind: runner,
                       leases=RedisTurnLeases(REDIS_URL, prefix=prefix, ttl_seconds=LEASE_S))


async def start(c: Any, chat: ChatService) -> tuple[str, str]:
    session = await c.session_service.create(c.default_tenant_id, title="t")
    turn = await chat.start(c.default_tenant_id, session.id, ChatBody(query="hello"), str(uuid.uuid4()))
    return session.id, turn.assistant_message_id


async def abandon(chat: ChatService) -> None:
    """What ``kill -9`` leaves: the turn stops where it is, nothing is written after it."""

    async def nothing(*_args: Any) -> None:
        return None

    chat._finish = nothing  # type: ignore[method-assign]
    for task in [*chat._tasks.values(), chat._lease_task]:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_dead_process_turn_is_closed_with_its_partial_answer_and_a_live_one_is_not(
        make_settings: Callable[..., Settings], redis_prefix: str) -> None:
    settings = make_settings(stream_log="redis", redis_prefix=redis_prefix, turn_lease_seconds=LEASE_S)
    async with started(settings) as c:
        gate_a, gate_b = asyncio.Event(), asyncio.Event()
        a = replica(c, redis_prefix, ScriptedRunner(gate=gate_a))
        b = replica(c, redis_prefix, ScriptedRunner(gate=gate_b))
        sid_a, mid_a = await start(c, a)
        sid_b, mid_b = await start(c, b)

        async def first_delta(sid: str, mid: str) -> list[StreamEvent]:
            events: list[StreamEvent] = await c.stream_log.read(sid, mid)
            return events if any(e.type == "answer" and e.content for e in events) else []

        seen = await eventually(lambda: first_delta(sid_a, mid_a))
        assert seen
        assert await eventually(lambda: first_delta(sid_b, mid_b))
        await abandon(a)
        follower = asyncio.create_task(_collect(c.stream_log.follow(sid_a, mid_a)))

        async def closed() -> bool:
            await c.chat_service.close_orphans(older_than_seconds=0)
            m = await c.session_service.get_message(c.default_tenant_id, mid_a)
            return bool(m is not None and m.is_completed)

        assert await eventually(closed, interval=0.5)
        message = await c.session_service.get_message(c.default_tenant_id, mid_a)
        assert message.debug["stopped"] == "interrupted"
        assert message.debug["truncated"] is True
        partial = "".join(e.content for e in seen if e.type == "answer")
        assert partial
        assert message.content == partial  # what the user saw, not an empty message
        events = await asyncio.wait_for(follower, 30)  # the follower ended
        assert [e.type for e in events[-2:]] == ["error", "complete"]

        # B is alive: its lease is refreshed, so neither a sweep now nor one past the lease TTL closes it.
        await asyncio.sleep(LEASE_S + 1)
        assert await c.chat_service.close_orphans(older_than_seconds=0) == 0
        live = await c.session_service.get_message(c.default_tenant_id, mid_b)
        assert not live.is_completed
        gate_b.set()

        async def b_done() -> bool:
            m = await c.session_service.get_message(c.default_tenant_id, mid_b)
            return bool(m is not None and m.is_completed)

        assert await eventually(b_done)
        finished = await c.session_service.get_message(c.default_tenant_id, mid_b)
        assert finished.content == EXPANDED
        assert "stopped" not in finished.debug
        await b.close()
        for chat in (a, b):
            await chat.log.close()
            await chat.stops.close()
            assert chat.leases is not None
            await chat.leases.close()


async def _collect(events: Any) -> list[StreamEvent]:
    return [e async for e in events if e is not None]
