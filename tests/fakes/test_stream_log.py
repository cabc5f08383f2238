"""The hand-driven keep-alive clock: events pass through unchanged, a keep-alive only when the test ticks."""

from __future__ import annotations

import asyncio

import pytest

from knora.adapters.stream.memory import MemoryStreamLog
from knora.domain.stream import StreamEvent
from tests.fakes.stream_log import ManualHeartbeatLog

pytestmark = pytest.mark.unit


def ev(kind: str, content: str = "", done: bool = False) -> StreamEvent:
    return StreamEvent(id="e", type=kind, content=content, done=done)


async def test_keepalive_only_on_tick_and_events_unchanged() -> None:
    log = ManualHeartbeatLog(MemoryStreamLog())
    await log.append("s", "m", ev("answer", "a"))
    got: list[str | None] = []
    async for e in log.follow("s", "m", heartbeat=15.0):
        got.append(None if e is None else e.content)
        if got == ["a"]:
            await asyncio.sleep(0.05)  # real time passing yields nothing: only a tick is a keep-alive
            log.tick()
        elif got == ["a", None]:
            await log.append("s", "m", ev("complete", "end", done=True))
    assert got == ["a", None, "end"]
    assert log.heartbeats == [15.0]
    assert [e.content for e in await log.read("s", "m")] == ["a", "end"]


async def test_without_heartbeat_ticks_are_ignored() -> None:
    log = ManualHeartbeatLog(MemoryStreamLog())
    log.tick()
    await log.append("s", "m", ev("answer", "a"))
    await log.append("s", "m", ev("complete", "end", done=True))
    got = [e async for e in log.follow("s", "m")]
    assert [None if e is None else e.content for e in got] == ["a", "end"]
