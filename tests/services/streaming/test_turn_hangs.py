"""A small run of ``benchmarks/turn_hangs.py`` (issue 16, item 1): many turns at once on the Redis log with
the fake model server, none left without its terminal entry or with its message incomplete. The
deterministic proof of the cause is ``tests/adapters/stream/test_stop_watcher.py``; this guards the whole
path under concurrency (the full figure is 5,000 turns at 300 chats, in docs/streaming.md)."""

from __future__ import annotations

import pytest

from benchmarks.turn_hangs import run
from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.integration, pytest.mark.redis, pytest.mark.slow, pytest.mark.timeout(240)]


async def test_no_turn_hangs_at_concurrency() -> None:
    figures = await run(turns=400, chats=80, chunks=10, chunk_delay=0.01, deadline=60.0, redis_url=REDIS_URL)
    assert figures["turns"] == 400
    assert figures["hung"] == 0
    assert figures["incomplete_messages"] == 0
