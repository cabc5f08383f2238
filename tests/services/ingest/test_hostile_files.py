"""Small files that exhaust memory or CPU (issue 20, 4e), through the API of running services that parse in
worker processes: each ends ``failed`` with a reason a user can act on while the server keeps answering, a
document still parsing can be deleted or re-parsed at once, and a job that failed by a limit is not resumed.

Limits are set small (a 1 s parse, a 600 MB worker) so that no test waits long; nothing asserts elapsed time.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import httpx
import psutil
import pytest

from knora.adapters.parsers.pool import ProcessParsers
from knora.root import Services
from knora.settings import Settings
from tests.conftest import RECORDING, client_for, started
from tests.fakes import bombs
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

Make = Callable[..., Settings]


def hostile_settings(make_settings: Make, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"parse_isolation": "process", "parse_timeout_seconds": 1.0,
                              "parse_memory_limit_mb": 600, "max_expanded_bytes": 64 << 20}
    return make_settings(**{**values, **overrides})


async def upload(http: httpx.AsyncClient, name: str, data: bytes) -> str:
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": name})).json()["data"]["id"]
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)})
    assert r.status_code == 200, r.text
    return str(r.json()["data"]["id"])


async def status(http: httpx.AsyncClient, kid: str) -> dict[str, Any]:
    data: dict[str, Any] = (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]
    return data


async def ended(http: httpx.AsyncClient, kid: str) -> dict[str, Any]:
    async def final() -> dict[str, Any] | None:
        k = await status(http, kid)
        return k if k["parse_status"] in ("completed", "failed") else None

    k = await eventually(final, timeout=60, interval=0.05)
    assert k is not None, "the document never ended"
    return k


async def while_parsing(c: Services, http: httpx.AsyncClient, kid: str) -> int:
    """Waits until a worker is parsing the document; answers /health meanwhile; the worker's pid."""
    parsers = c.parsers
    assert isinstance(parsers, ProcessParsers)
    pids = await eventually(parsers.worker_pids, timeout=30)
    assert pids
    assert (await http.get("/health")).status_code == 200  # the event loop is free while a bomb is parsed
    assert (await status(http, kid))["parse_status"] in ("pending", "processing")
    return pids[0]


@pytest.mark.parametrize(("name", "build", "reason", "timeout"), [
    # the lie is found in a few reads, not by the clock: a generous timeout, so that a loaded machine (the
    # worker's first imports) cannot end it by the 1 s limit first
    ("lying.docx", lambda: bombs.lying_docx(real_bytes=256 << 20), "holds more than its header says", 60.0),
    ("xml.docx", lambda: bombs.xml_docx(400_000), r"^stopped: parsing took longer than 1 s", 1.0),
    ("pages.pdf", lambda: bombs.pdf_shared_stream(pages=200, stream_bytes=2 << 20),
     r"^stopped: parsing took longer than 1 s", 1.0),
], ids=["lying-zip-headers", "50MB-xml", "shared-content-stream"])
async def test_a_hostile_file_ends_failed_with_a_reason_and_is_not_resumed(
        make_settings: Make, name: str, build: Callable[[], bytes], reason: str, timeout: float) -> None:
    settings = hostile_settings(make_settings, parse_timeout_seconds=timeout)
    async with started(settings, RECORDING) as c, client_for(c) as http:
        kid = await upload(http, name, build())
        k = await ended(http, kid)
        assert k["parse_status"] == "failed"
        assert re.search(reason, k["error_message"]), k["error_message"]
        assert (await http.get("/health")).status_code == 200
        await c.jobs.wait_idle(10)
        assert await c.repos.jobs.count_active() == 0  # finished: nothing to resume after a restart
    async with started(settings, RECORDING) as again, client_for(again) as http2:
        await again.jobs.wait_idle(10)
        assert (await status(http2, kid))["parse_status"] == "failed"


async def test_a_worker_out_of_memory_fails_the_document_with_the_limit(make_settings: Make) -> None:
    settings = hostile_settings(make_settings, parse_memory_limit_mb=200, parse_timeout_seconds=60,
                                max_expanded_bytes=512 << 20)
    async with started(settings, RECORDING) as c, client_for(c) as http:
        kid = await upload(http, "big.docx", bombs.xml_docx(2_000_000))  # ~80 MB of XML for a 200 MB worker
        k = await ended(http, kid)
    assert k["parse_status"] == "failed"
    assert k["error_message"].startswith("stopped: parsing needed more than 200 MB of memory"), k


async def test_deleting_a_document_while_it_is_parsed_stops_the_parse(make_settings: Make) -> None:
    settings = hostile_settings(make_settings, parse_timeout_seconds=120)
    async with started(settings, RECORDING) as c, client_for(c) as http:
        kid = await upload(http, "pages.pdf", bombs.pdf_shared_stream(pages=200, stream_bytes=2 << 20))
        pid = await while_parsing(c, http, kid)
        r = await asyncio.wait_for(http.delete(f"/api/v1/knowledge/{kid}"), 30)  # before: the whole parse
        assert r.status_code == 200, r.text
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert (await http.get(f"/api/v1/knowledge/{kid}")).status_code == 404
        await c.jobs.wait_idle(10)
        assert await c.repos.knowledge.get(None, kid) is None  # not resurrected by the job's end
        ok = await upload(http, "fine.md", b"# Fine\n\nThe parser pool is free again.")
        assert (await ended(http, ok))["parse_status"] == "completed"


async def test_reparsing_a_document_while_it_is_parsed_restarts_the_parse(make_settings: Make) -> None:
    settings = hostile_settings(make_settings, parse_timeout_seconds=120)
    async with started(settings, RECORDING) as c, client_for(c) as http:
        kid = await upload(http, "pages.pdf", bombs.pdf_shared_stream(pages=200, stream_bytes=2 << 20))
        first = await while_parsing(c, http, kid)
        r = await asyncio.wait_for(http.post(f"/api/v1/knowledge/{kid}/reparse"), 30)
        assert r.status_code == 200, r.text
        parsers = c.parsers
        assert isinstance(parsers, ProcessParsers)
        second = await eventually(lambda: [p for p in parsers.worker_pids() if p != first], timeout=30)
        assert second  # the new job parses in a new worker: the old one was killed
        assert first not in parsers.worker_pids()


async def test_deleting_the_knowledge_base_stops_its_documents_parse(make_settings: Make) -> None:
    settings = hostile_settings(make_settings, parse_timeout_seconds=120)
    async with started(settings, RECORDING) as c, client_for(c) as http:
        kid = await upload(http, "pages.pdf", bombs.pdf_shared_stream(pages=200, stream_bytes=2 << 20))
        kb = (await status(http, kid))["knowledge_base_id"]
        pid = await while_parsing(c, http, kid)
        r = await asyncio.wait_for(http.delete(f"/api/v1/knowledge-bases/{kb}"), 30)
        assert r.status_code == 200, r.text
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        await c.jobs.wait_idle(10)
        assert await c.repos.knowledge.get(None, kid) is None
