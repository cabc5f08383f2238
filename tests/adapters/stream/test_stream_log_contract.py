"""One contract for every StreamLog and StopSignals implementation (memory and Redis)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from knora.adapters.stream.memory import MemoryStopSignals, MemoryStreamLog
from knora.adapters.stream.redis import RedisStreamLog
from knora.adapters.stream.redis_stops import RedisStopSignals
from knora.domain.stream import StreamEvent
from knora.ports.stream_log import StopSignals, StreamLog
from tests.conftest import REDIS_URL
from tests.fakes.cut_proxy import CutProxy


@pytest.fixture(params=["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.integration])])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Any, Any]]:
    if request.param == "memory":
        pair: tuple[Any, Any] = (MemoryStreamLog(ttl_seconds=60), MemoryStopSignals())
    else:
        prefix = request.getfixturevalue("redis_prefix")
        pair = (RedisStreamLog(REDIS_URL, prefix=prefix, ttl_seconds=60), RedisStopSignals(REDIS_URL,
                                                                                           prefix=prefix))
    yield pair
    await pair[0].close()
    await pair[1].close()


def ev(kind: str, content: str = "", done: bool = False) -> StreamEvent:
    return StreamEvent(id=f"e-{kind}", type=kind, content=content, done=done)


async def collect(it: AsyncIterator[StreamEvent | None]) -> list[StreamEvent]:
    out = []
    async for e in it:
        assert e is not None, "no heartbeat was asked for"
        out.append(e)
    return out


class TestStreamLogContract:
    async def test_satisfies_ports(self, backend: tuple[Any, Any]) -> None:
        assert isinstance(backend[0], StreamLog)
        assert isinstance(backend[1], StopSignals)

    async def test_append_assigns_gap_free_seq(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        seqs = [await log.append("s", "m", ev("answer", str(i))) for i in range(5)]
        assert seqs == [0, 1, 2, 3, 4]
        assert [e.seq for e in await log.read("s", "m")] == [0, 1, 2, 3, 4]
        assert [e.content for e in await log.read("s", "m", after=2)] == ["3", "4"]
        assert await log.read("s", "m", after=4) == []
        assert await log.read("s", "other") == []
        assert await log.exists("s", "m")
        assert not await log.exists("s", "other")

    async def test_round_trip_keeps_fields(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        e = StreamEvent(id="x1", type="references", content="c", done=True,
                        data={"references": [{"id": "k", "score": 0.5, "metadata": {"a": "b"}}]})
        await log.append("s", "m", e)
        (got,) = await log.read("s", "m")
        assert got.model_dump(exclude={"seq"}) == e.model_dump(exclude={"seq"})
        assert got.seq == 0

    async def test_streams_are_separate(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        await log.append("s", "m1", ev("a"))
        await log.append("s", "m2", ev("b"))
        assert await log.append("s", "m1", ev("c")) == 1
        assert [e.type for e in await log.read("s", "m1")] == ["a", "c"]

    async def test_follow_replays_then_follows_live_until_terminal(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        await log.append("s", "m", ev("agent_query", done=True))
        await log.append("s", "m", ev("answer", "Hel"))
        task = asyncio.create_task(collect(log.follow("s", "m")))
        await asyncio.sleep(0.05)
        assert not task.done()
        await log.append("s", "m", ev("answer", "lo"))
        await log.append("s", "m", ev("error", "boom", done=True))  # errors do not end a turn
        await log.append("s", "m", ev("complete", done=True))
        await log.append("s", "m", ev("session_title", "T", done=True))
        got = await asyncio.wait_for(task, 10)
        assert [e.type for e in got] == ["agent_query", "answer", "answer", "error", "complete"]
        assert [e.seq for e in got] == [0, 1, 2, 3, 4]

    async def test_follow_from_cursor_has_no_gap_or_duplicate(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        for i in range(3):
            await log.append("s", "m", ev("answer", str(i)))
        task = asyncio.create_task(collect(log.follow("s", "m", after=1)))
        for i in range(3, 6):
            await log.append("s", "m", ev("answer", str(i)))
        await log.append("s", "m", ev("stop", done=True))
        got = await asyncio.wait_for(task, 10)
        assert [e.content for e in got] == ["2", "3", "4", "5", ""]
        assert got[-1].type == "stop"

    async def test_follow_waits_for_a_stream_that_starts_later(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        task = asyncio.create_task(collect(log.follow("s", "late")))
        await asyncio.sleep(0.05)
        await log.append("s", "late", ev("answer", "x"))
        await log.append("s", "late", ev("complete", done=True))
        assert [e.type for e in await asyncio.wait_for(task, 10)] == ["answer", "complete"]

    async def test_heartbeat_yields_none_while_idle(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        await log.append("s", "hb", ev("answer", "a"))
        got: list[str | None] = []
        async for e in log.follow("s", "hb", heartbeat=0.05):
            got.append(None if e is None else e.type)
            if e is None and got.count(None) == 1:
                await log.append("s", "hb", ev("complete", done=True))  # idle → heartbeat → then the end
        assert got[0] == "answer"
        assert got[-1] == "complete"
        assert None in got

    async def test_many_followers_all_see_everything(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        tasks = [asyncio.create_task(collect(log.follow("s", "m"))) for _ in range(20)]
        await asyncio.sleep(0.05)
        for i in range(50):
            await log.append("s", "m", ev("answer", str(i)))
        await log.append("s", "m", ev("complete", done=True))
        results = await asyncio.wait_for(asyncio.gather(*tasks), 20)
        for got in results:
            assert [e.seq for e in got] == list(range(51))

    async def test_concurrent_appends_of_many_streams_keep_each_streams_order(self,
                                                                             backend: tuple[Any,
                                                                                            Any]) -> None:
        """Hundreds of streams appending at once (Redis: batched into pipelines) — per stream gap-free, in
        order."""
        log = backend[0]
        streams, per_stream = 300, 5

        async def writer(n: int) -> list[int]:
            return [await log.append("s", f"m{n}", ev("answer", str(i))) for i in range(per_stream)]

        seqs = await asyncio.wait_for(asyncio.gather(*(writer(n) for n in range(streams))), 30)
        assert all(s == list(range(per_stream)) for s in seqs)
        both = await asyncio.gather(log.append("s", "same", ev("answer", "a")), log.append("s", "same",
                                                                                           ev("answer", "b")))
        assert sorted(both) == [0, 1]
        for n in (0, streams // 2, streams - 1):
            assert [e.content for e in await log.read("s", f"m{n}")] == [str(i) for i in range(per_stream)]

    async def test_followers_joining_at_different_points_each_get_their_part(self,
                                                                             backend: tuple[Any,
                                                                                            Any]) -> None:
        """Redis: one shared reader per process; a late joiner reads the stored part itself, then shares
        it."""
        log = backend[0]
        early = asyncio.create_task(collect(log.follow("s", "join")))
        await asyncio.sleep(0.05)
        for i in range(5):
            await log.append("s", "join", ev("answer", str(i)))
        late = asyncio.create_task(collect(log.follow("s", "join")))
        from_cursor = asyncio.create_task(collect(log.follow("s", "join", after=2)))
        await asyncio.sleep(0.05)
        for i in range(5, 8):
            await log.append("s", "join", ev("answer", str(i)))
        await log.append("s", "join", ev("complete", done=True))
        got = await asyncio.wait_for(asyncio.gather(early, late, from_cursor), 20)
        assert [e.seq for e in got[0]] == list(range(9))
        assert [e.seq for e in got[1]] == list(range(9))
        assert [e.seq for e in got[2]] == list(range(3, 9))
        again = await asyncio.wait_for(collect(log.follow("s", "join", after=6)), 10)  # after the end: replay
        assert [e.seq for e in again] == [7, 8]

    async def test_heartbeat_only_when_idle(self, backend: tuple[Any, Any]) -> None:
        """Events more often than the heartbeat: no keep-alive in between; then idle: keep-alives again."""
        log = backend[0]
        got: list[str | None] = []

        async def follower() -> None:
            async for e in log.follow("s", "busy", heartbeat=1.0):
                got.append(None if e is None else e.content)
                if e is None and got.count(None) == 2:
                    await log.append("s", "busy", ev("complete", done=True))

        task = asyncio.create_task(follower())
        for i in range(10):
            await log.append("s", "busy", ev("answer", str(i)))
            await asyncio.sleep(0.01)
        await asyncio.wait_for(task, 10)
        assert got[:10] == [str(i) for i in range(10)]
        assert got[10:] == [None, None, ""]


class TestStopSignalsContract:
    async def test_stop_wakes_a_waiter(self, backend: tuple[Any, Any]) -> None:
        stops = backend[1]
        assert not await stops.is_stopped("m")
        waiter = asyncio.create_task(stops.wait_for_stop("m"))
        other = asyncio.create_task(stops.wait_for_stop("m-other"))
        await asyncio.sleep(0.1)
        await stops.request_stop("m")
        await asyncio.wait_for(waiter, 10)
        assert await stops.is_stopped("m")
        assert not await stops.is_stopped("m-other")
        assert not other.done()
        other.cancel()

    async def test_stop_before_wait_returns_at_once(self, backend: tuple[Any, Any]) -> None:
        stops = backend[1]
        await stops.request_stop("early")
        await asyncio.wait_for(stops.wait_for_stop("early"), 10)


@pytest.mark.unit
class TestMemoryRetention:
    async def test_expired_streams_are_dropped(self) -> None:
        log = MemoryStreamLog(ttl_seconds=0)
        await log.append("s", "m", ev("answer"))
        await asyncio.sleep(0.01)
        assert not await log.exists("s", "m")
        assert await log.read("s", "m") == []

    async def test_stream_count_is_bounded(self) -> None:
        log = MemoryStreamLog(ttl_seconds=3600, max_streams=10)
        for i in range(50):
            await log.append("s", f"m{i}", ev("answer"))
        assert len(log._streams) <= 11
        assert await log.exists("s", "m49")
        assert not await log.exists("s", "m0")


@pytest.mark.redis
@pytest.mark.integration
class TestRedisSpecifics:
    async def test_key_layout_and_ttl_refreshed_on_append(self, redis_prefix: str) -> None:
        import redis.asyncio as aioredis

        log = RedisStreamLog(REDIS_URL, prefix=redis_prefix, ttl_seconds=100)
        raw = aioredis.Redis.from_url(REDIS_URL)
        try:
            key = f"{redis_prefix}:stream:events:s:m"
            await log.append("s", "m", ev("answer"))
            await raw.expire(key, 5)
            await log.append("s", "m", ev("answer"))
            assert 90 < await raw.ttl(key) <= 100
            assert await raw.type(key) == b"stream"
        finally:
            await raw.aclose()
            await log.close()

    async def test_a_stream_that_expires_while_followed_ends_its_followers(
            self, redis_prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
        from knora.adapters.stream import redis as redis_log

        monkeypatch.setattr(redis_log, "BLOCK_MS", 100)  # the reader notices expiry at its next empty read
        log = RedisStreamLog(REDIS_URL, prefix=redis_prefix, ttl_seconds=100)
        try:
            await log.append("s", "gone", ev("answer", "a"))
            await log.append("s", "kept", ev("answer", "k"))
            gone = asyncio.create_task(collect(log.follow("s", "gone")))
            kept = asyncio.create_task(collect(log.follow("s", "kept")))
            await asyncio.sleep(0.3)
            await log._client.pexpire(f"{redis_prefix}:stream:events:s:gone", 50)  # as its TTL running out
            assert [e.content for e in await asyncio.wait_for(gone, 10)] == ["a"]
            assert not kept.done()  # the other stream is still followed
            await log.append("s", "kept", ev("complete", done=True))
            assert [e.type for e in await asyncio.wait_for(kept, 10)] == ["answer", "complete"]
            assert not await log.exists("s", "gone")
            assert await log.read("s", "gone") == []
        finally:
            await log.close()

    async def test_two_clients_share_one_log(self, redis_prefix: str) -> None:
        a = RedisStreamLog(REDIS_URL, prefix=redis_prefix)
        b = RedisStreamLog(REDIS_URL, prefix=redis_prefix)
        try:
            task = asyncio.create_task(collect(b.follow("s", "m")))
            await a.append("s", "m", ev("answer", "1"))
            assert await b.append("s", "m", ev("answer", "2")) == 1
            await a.append("s", "m", ev("complete", done=True))
            assert [e.content for e in await asyncio.wait_for(task, 10)] == ["1", "2", ""]
        finally:
            await a.close()
            await b.close()


class TestIdempotentAppends:
    async def test_an_event_with_an_append_key_is_stored_once(self, backend: tuple[Any, Any]) -> None:
        log = backend[0]
        await log.append("s", "m", ev("answer", "a"))
        again = StreamEvent(id="x", type="answer", content="b", append_key="k-1")
        assert await log.append("s", "m", again) == 1
        assert await log.append("s", "m", again) == 1  # a retry of the same append
        assert await log.append("s", "m", ev("answer", "c")) == 2
        assert [e.content for e in await log.read("s", "m")] == ["a", "b", "c"]

    @pytest.mark.redis
    @pytest.mark.integration
    async def test_a_redis_append_retried_after_its_reply_was_lost_is_stored_once(
            self, redis_prefix: str) -> None:
        """The first EVALSHA is applied but the proxy drops its reply with the connection; redis-py retries
        on a new connection (``reconnecting``). Before append keys, the retry wrote the event twice."""
        async with CutProxy("127.0.0.1", 6379) as proxy:
            log = RedisStreamLog(proxy.url, prefix=redis_prefix, ttl_seconds=60)
            try:
                assert await log.append("s", "m", ev("answer", "a")) == 0  # the script is loaded by now
                follower = asyncio.create_task(collect(log.follow("s", "m")))
                proxy.lose_next_reply(b"EVALSHA")
                assert await log.append("s", "m", ev("answer", "b")) == 1
                assert proxy.lost_replies == 1
                retried = ev("answer", "c")  # the chat service's own retry of a failed append
                assert await log.append("s", "m", retried) == 2
                assert await log.append("s", "m", retried) == 2
                await log.append("s", "m", ev("complete", done=True))
                assert [e.content for e in await asyncio.wait_for(follower, 10)] == ["a", "b", "c", ""]
                assert [e.seq for e in await log.read("s", "m")] == [0, 1, 2, 3]
            finally:
                await log.close()
