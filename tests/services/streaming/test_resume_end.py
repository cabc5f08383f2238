"""A resume whose cursor is at or past the turn's end closes, on both stream logs (issue 20, 6a).

Before the fix each of these followed the log past its terminal event and sent keep-alives until the log
expired; the ``asyncio.wait_for`` bound below is only there so a regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from knora.adapters.stream.memory import MemoryStreamLog
from knora.adapters.stream.redis import RedisStreamLog
from knora.domain.stream import StreamEvent
from knora.ports.stream_log import StreamLog
from knora.services.streaming.sse import KEEPALIVE, resume_cursor, stream_frames
from tests.conftest import REDIS_URL
from tests.services.streaming.sse import parse_sse

HANG_GUARD_S = 10.0


@pytest.fixture(params=["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.integration])])
async def log(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if request.param == "memory":
        the_log: Any = MemoryStreamLog(ttl_seconds=60)
    else:
        the_log = RedisStreamLog(REDIS_URL, prefix=request.getfixturevalue("redis_prefix"), ttl_seconds=60)
    yield the_log
    await the_log.close()


def ev(kind: str, content: str = "", done: bool = False) -> StreamEvent:
    return StreamEvent(id=f"e-{kind}", type=kind, content=content, done=done)


async def fill(log: StreamLog, *kinds: str) -> None:
    for kind in kinds:
        await log.append("s", "m", ev(kind, kind, done=kind in ("complete", "stop", "session_title")))


async def resume(log: StreamLog, after: int) -> bytes:
    """Every byte a continue-stream after ``after`` sends (keep-alives included), up to its end."""

    async def drain() -> bytes:
        return b"".join([chunk async for chunk in stream_frames(log, "s", "m", "r", after=after,
                                                                 keepalive=0.01)])

    return await asyncio.wait_for(drain(), HANG_GUARD_S)


FINISHED = ("agent_query", "answer", "complete", "session_title")  # seqs 0..3, complete at 2


class TestCursorAtOrPastTheEnd:
    @pytest.mark.parametrize("after", [2, 3, 9998])  # the complete frame, the title after it, offset=9999
    async def test_finished_turn_closes_with_nothing_more(self, log: StreamLog, after: int) -> None:
        await fill(log, *FINISHED)
        assert await resume(log, after) == b""

    async def test_stopped_turn_closes(self, log: StreamLog) -> None:
        await fill(log, "agent_query", "answer", "stop")
        assert await resume(log, 2) == b""
        assert await resume(log, 50) == b""

    async def test_cursor_before_the_end_still_gets_the_end(self, log: StreamLog) -> None:
        await fill(log, *FINISHED)
        assert parse_sse(await resume(log, 1)).types == ["complete"]
        assert parse_sse(await resume(log, -1)).types == ["agent_query", "answer", "complete"]

    async def test_cursor_past_a_running_turn_follows_it_to_its_end(self, log: StreamLog) -> None:
        """offset=9999 while the turn runs: clamped to the log's end, so the terminal event still ends it."""
        await fill(log, "agent_query", "answer")

        async def run() -> list[bytes]:
            chunks: list[bytes] = []
            async for chunk in stream_frames(log, "s", "m", "r", after=9998, keepalive=0.01):
                if chunk == KEEPALIVE:
                    if not chunks:  # the resume is waiting on the log: the turn goes on
                        chunks.append(chunk)
                        await fill(log, "answer", "complete")
                    continue
                chunks.append(chunk)
            return chunks

        got = await asyncio.wait_for(run(), HANG_GUARD_S)
        assert parse_sse(b"".join(got[1:])).types == ["answer", "complete"]


class TestResumeCursor:
    async def test_cursor_is_clamped_to_the_log_and_none_once_ended(self, log: StreamLog) -> None:
        await fill(log, "agent_query", "answer")
        assert await resume_cursor(log, "s", "m", 0) == 0
        assert await resume_cursor(log, "s", "m", 9998) == 1
        await fill(log, "complete")
        assert await resume_cursor(log, "s", "m", 1) == 1
        assert await resume_cursor(log, "s", "m", 2) is None
        assert await resume_cursor(log, "s", "other", 5) == 5  # nothing stored: unchanged
