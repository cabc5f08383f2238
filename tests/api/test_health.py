"""Liveness and readiness: ``/health`` answers while the process runs; ``/health/ready`` only while the
database and, with the Redis stream log, Redis answer — a Redis that goes away is named in a 503, and the
replica is ready again when it is back."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest

from knora.settings import Settings
from tests.conftest import client_for, started
from tests.polling import eventually
from tests.web.conftest import free_port

pytestmark = pytest.mark.integration


async def test_ready_on_the_embedded_default(sqlite_container: object) -> None:
    async with client_for(sqlite_container) as http:  # type: ignore[arg-type]
        assert (await http.get("/health")).json() == {"status": "ok"}
        r = await http.get("/health/ready")
        assert r.status_code == 200
        assert r.json() == {"status": "ready"}


@pytest.fixture
def own_redis() -> Iterator[tuple[str, Callable[[], None]]]:
    """A Redis server of this test's own (so it can be stopped), and the function that stops it."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        proc.kill()
        proc.wait(10)

    try:
        yield f"redis://127.0.0.1:{port}/0", stop
    finally:
        if proc.poll() is None:
            stop()


async def test_not_ready_while_redis_is_gone(make_settings: Callable[..., Settings],
                                             own_redis: tuple[str, Callable[[], None]]) -> None:
    url, stop = own_redis
    import redis.asyncio as aioredis

    async def up() -> bool:
        client = aioredis.from_url(url)
        try:
            return bool(await client.ping())
        except aioredis.ConnectionError:
            return False
        finally:
            await client.aclose()

    assert await eventually(up)
    async with started(make_settings(stream_log="redis", redis_url=url)) as c, client_for(c) as http:
        assert (await http.get("/health/ready")).status_code == 200
        stop()
        r = await http.get("/health/ready")
        assert r.status_code == 503
        body = r.json()
        assert body["status"] == "unavailable"
        assert any(p.startswith(("stream log", "stop signals")) for p in body["problems"]), body
        assert (await http.get("/health")).status_code == 200  # alive all the same
