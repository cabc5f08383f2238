"""Cancelling a parse that is running (knora.services.ingest.batch): the job is stopped, not waited for."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from knora.domain.knowledge import ParseStatus
from knora.services.ingest.batch import KnowledgeBatchService
from knora.settings import Settings
from tests.conftest import started
from tests.polling import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def silent_site() -> Iterator[str]:
    """A server that accepts connections and never answers: a URL import from it stays ``processing``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/page.html"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


class TestCancelParse:
    async def test_a_running_parse_is_stopped(self, make_settings: Callable[..., Settings],
                                             silent_site: str) -> None:
        settings = make_settings(allow_private_network_fetch=True, url_fetch_timeout_seconds=120)
        async with started(settings) as c:
            tenant = c.default_tenant_id
            kb = await c.kb_service.create(tenant, {"name": "Docs"})
            k = await c.ingest_service.add_url(tenant, kb.id, silent_site)

            async def processing() -> bool:
                got = await c.ingest_service.get(tenant, k.id)
                return got.parse_status == ParseStatus.PROCESSING

            assert await eventually(processing)
            cancelled = await KnowledgeBatchService(c.ingest_service).cancel_parse(tenant, k.id)
            assert cancelled.parse_status == ParseStatus.CANCELLED
            await c.jobs.wait_idle(10)  # the fetch would have held the job for 120 s
            assert (await c.ingest_service.get(tenant, k.id)).parse_status == ParseStatus.CANCELLED
