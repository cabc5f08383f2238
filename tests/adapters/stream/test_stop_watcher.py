"""The stop watcher never loses a cancellation (issue 16, item 1).

At 300 concurrent chats on the Redis log, ~1.7 % of turns hung after their answer was logged: the turn awaited
its stop watcher, which had been cancelled but went on looping. The watcher called ``EXISTS`` itself, and a
cancellation that reached redis-py inside a command (``send_packed_command``) could come back as a normal
return. ``SwallowingExists`` plays that part deterministically: its first call waits until it is
cancelled and then returns "not stopped". The old watcher looped on for ever (this test timed out on it);
now the watcher awaits only its own event, so its cancellation always ends it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from knora.adapters.stream.redis_stops import RedisStopSignals
from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.integration, pytest.mark.redis]

BOUND_S = 10.0  # a bound on the watcher's end, far beyond what it needs: never a timer that must fire


class SwallowingExists:
    """``EXISTS`` whose first call, once cancelled, returns 0 as if nothing happened (what redis-py did)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.entered = asyncio.Event()
        self.swallowed = 0

    async def __call__(self, *keys: str) -> int:
        if self.swallowed:
            return int(await self.real(*keys))
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.swallowed += 1
        return 0


@pytest.fixture
async def signals(redis_prefix: str) -> AsyncIterator[RedisStopSignals]:
    s = RedisStopSignals(REDIS_URL, prefix=redis_prefix)
    yield s
    await s.close()


class TestStopWatcher:
    async def test_a_cancelled_watcher_ends_even_if_the_client_swallows_the_cancel(
            self, signals: RedisStopSignals) -> None:
        exists = SwallowingExists(signals._client.exists)
        signals._client.exists = exists  # type: ignore[method-assign]
        watcher = asyncio.create_task(signals.wait_for_stop(uuid.uuid4().hex))
        done, _ = await asyncio.wait({watcher}, timeout=0.5)
        assert not done  # no stop was requested: the watcher waits
        watcher.cancel()
        done, _ = await asyncio.wait({watcher}, timeout=BOUND_S)
        assert done, "the cancelled watcher kept running"
        assert watcher.cancelled()

    async def test_the_watcher_is_cancelled_while_its_stop_key_is_being_read(
            self, signals: RedisStopSignals) -> None:
        """The exact moment of the hang: the cancel arrives while EXISTS for this very turn is in flight."""
        exists = SwallowingExists(signals._client.exists)
        signals._client.exists = exists  # type: ignore[method-assign]
        pipeline = signals._client.pipeline

        def swallowing_pipeline(*args: Any, **kwargs: Any) -> Any:  # the checker reads keys in a pipeline
            pipe = pipeline(*args, **kwargs)
            execute = pipe.execute

            async def run(*a: Any, **k: Any) -> Any:
                await exists()
                return await execute(*a, **k)

            pipe.execute = run
            return pipe

        signals._client.pipeline = swallowing_pipeline  # type: ignore[method-assign]
        watcher = asyncio.create_task(signals.wait_for_stop(uuid.uuid4().hex))
        await asyncio.wait_for(exists.entered.wait(), BOUND_S)
        watcher.cancel()
        done, _ = await asyncio.wait({watcher}, timeout=BOUND_S)
        assert done, "the cancelled watcher kept running"

    async def test_a_stop_still_wakes_the_watcher(self, signals: RedisStopSignals) -> None:
        mid = uuid.uuid4().hex
        watcher = asyncio.create_task(signals.wait_for_stop(mid))
        await signals.request_stop(mid)
        await asyncio.wait_for(watcher, BOUND_S)

    async def test_a_stop_requested_before_the_watch_is_seen(self, signals: RedisStopSignals) -> None:
        mid = uuid.uuid4().hex
        await signals.request_stop(mid)
        await asyncio.wait_for(signals.wait_for_stop(mid), BOUND_S)

    async def test_a_stop_whose_message_was_lost_is_seen_by_the_periodic_check(
            self, redis_prefix: str) -> None:
        s = RedisStopSignals(REDIS_URL, prefix=redis_prefix, check_seconds=0.2)
        try:
            mid = uuid.uuid4().hex
            watcher = asyncio.create_task(s.wait_for_stop(mid))
            done, _ = await asyncio.wait({watcher}, timeout=0.5)
            assert not done
            await s._client.set(s._key(mid), "1", ex=60)  # the key only: its pub/sub message was lost
            await asyncio.wait_for(watcher, BOUND_S)
        finally:
            await s.close()
