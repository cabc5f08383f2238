"""Every turn ends, whatever store fails at its end (issue 20, items 6b and 7).

- 6b: the database write that completes the message fails a few times (PostgreSQL down): the log still gets
  ``complete`` at once, and the answer is saved by a background retry once writes succeed again.
- 7: Redis goes away mid-turn (a proxy between the log and Redis is cut): the saved answer is flagged
  truncated; once Redis is back the log gets an error frame then ``complete``, and the next turn works.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from knora.adapters.stream.redis import RedisStreamLog
from knora.domain.stream import StreamEvent
from knora.services.streaming.durable import Retries
from knora.services.streaming.intake import ChatBody
from knora.settings import Settings
from tests.conftest import REDIS_URL, started
from tests.fakes.cut_proxy import CutProxy
from tests.polling import eventually
from tests.services.streaming.runners import ANSWER, EXPANDED, ScriptedRunner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

FAST = Retries((0.05, 0.1, 0.2, *(0.3,) * 100))  # each test gets its own copy below


class FlakyMessages:
    """The message repository, whose ``complete`` fails its first ``failures`` calls (the database down)."""

    def __init__(self, inner: Any, failures: int) -> None:
        self._inner = inner
        self.failures = failures
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionRefusedError("database is down")
        await self._inner.complete(*args, **kwargs)


async def start_turn(c: Any, runner: ScriptedRunner) -> tuple[str, str]:
    c.runners.quick = runner
    session = await c.session_service.create(c.default_tenant_id, title="t")
    turn = await c.chat_service.start(c.default_tenant_id, session.id, ChatBody(query="hello"),
                                      str(uuid.uuid4()))
    return session.id, turn.assistant_message_id


def ended(events: list[StreamEvent]) -> bool:
    return any(e.type in ("complete", "stop") for e in events)


@pytest.mark.parametrize("stream_log", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_failing_final_write_still_completes_the_stream_and_saves_later(
        make_settings: Callable[..., Settings], request: pytest.FixtureRequest, stream_log: str) -> None:
    extra = {"redis_prefix": request.getfixturevalue("redis_prefix")} if stream_log == "redis" else {}
    async with started(make_settings(stream_log=stream_log, **extra)) as c:
        c.chat_service.retries = Retries(FAST.delays)
        flaky = FlakyMessages(c.session_service.messages, failures=3)
        c.session_service.messages = flaky
        sid, mid = await start_turn(c, ScriptedRunner())
        events = await eventually(lambda: _read_if_ended(c, sid, mid))
        assert events, "the turn never ended"
        assert events[-1].type == "complete"
        assert not [e for e in events if e.type == "error"]

        async def saved() -> Any:
            m = await c.session_service.get_message(c.default_tenant_id, mid)
            return m if m is not None and m.is_completed else None

        message = await eventually(saved)
        assert message is not None, "the answer was never saved"
        assert message.content == EXPANDED
        assert flaky.calls == 4  # three failures, then the retry that saved it
        assert await eventually(lambda: c.chat_service.retries.pending == 0)  # then released its lease


async def _read_if_ended(c: Any, sid: str, mid: str) -> list[StreamEvent]:
    events: list[StreamEvent] = await c.stream_log.read(sid, mid)
    return events if ended(events) else []


@pytest.mark.redis
async def test_a_redis_outage_mid_turn_flags_the_answer_and_ends_the_log_when_redis_is_back(
        make_settings: Callable[..., Settings], redis_prefix: str) -> None:
    direct = RedisStreamLog(REDIS_URL, prefix=redis_prefix)
    async with CutProxy("127.0.0.1", 6379) as proxy, started(make_settings(
            stream_log="redis", redis_url=proxy.url, redis_prefix=redis_prefix)) as c:
        c.chat_service.retries = Retries(FAST.delays)
        gate = asyncio.Event()
        sid, mid = await start_turn(c, ScriptedRunner(gate=gate))

        async def first_delta() -> bool:
            return any(e.type == "answer" and e.content for e in await direct.read(sid, mid))

        assert await eventually(first_delta)
        await proxy.cut()
        gate.set()  # the runner goes on appending into the outage

        async def saved() -> Any:
            m = await c.session_service.get_message(c.default_tenant_id, mid)
            return m if m is not None and m.is_completed else None

        message = await eventually(saved)
        assert message is not None, "the turn did not end during the outage"
        assert message.debug.get("truncated") is True
        assert any(err.get("stage") == "stream" for err in message.debug.get("errors", []))
        assert message.content
        assert len(message.content) < len(ANSWER)
        assert not ended(await direct.read(sid, mid))  # nothing could be appended yet

        await proxy.restore()
        events = await eventually(lambda: _read_if_ended_log(direct, sid, mid))
        assert [e.type for e in events[-2:]] == ["error", "complete"]
        assert events[-2].data["stage"] == "stream"

        # The log's clients reconnected: the next turn on the same services streams to its end.
        sid2, mid2 = await start_turn(c, ScriptedRunner())
        events2 = await eventually(lambda: _read_if_ended_log(direct, sid2, mid2))
        assert events2
        assert events2[-1].type == "complete"
        assert not [e for e in events2 if e.type == "error"]
        await c.chat_service.wait_idle()
    await direct.close()


async def _read_if_ended_log(log: RedisStreamLog, sid: str, mid: str) -> list[StreamEvent]:
    events = await log.read(sid, mid)
    return events if ended(events) else []


@pytest.mark.redis
async def test_the_log_reconnects_after_redis_restarts_under_idle_pooled_connections(
        redis_prefix: str) -> None:
    """Redis restarted while the pool held connections: without health checks and retries the first append
    afterwards failed with "Connection closed by server" (the first chat after recovery in the issue)."""
    async with CutProxy("127.0.0.1", 6379) as proxy:
        log = RedisStreamLog(proxy.url, prefix=redis_prefix)
        try:
            await log.append("s", "m", StreamEvent(type="answer", content="a"))
            await asyncio.gather(*(log.exists("s", str(i)) for i in range(5)))  # several pooled connections
            await proxy.cut()
            await proxy.restore()
            after = log.append("s", "m", StreamEvent(type="answer", content="b"))
            assert await asyncio.wait_for(after, 20) == 1
            assert [e.content for e in await log.read("s", "m")] == ["a", "b"]
        finally:
            await log.close()
