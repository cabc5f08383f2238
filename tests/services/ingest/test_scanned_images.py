"""Image files through the API of running services that parse in worker processes at the default memory cap:
a scanned page becomes searchable by what is written on it (English and Chinese), its chunks carry page 1,
and a 20,000 × 20,000 pixel image ends ``failed`` with its size in the reason."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.adapters.parsers.test_image import png_header
from tests.conftest import client_for, started
from tests.fakes.scans import scan_png
from tests.services.ingest.test_hostile_files import ended, upload

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

Make = Callable[..., Settings]


@pytest.fixture
async def http(make_settings: Make) -> AsyncIterator[httpx.AsyncClient]:
    async with started(make_settings(parse_isolation="process")) as c, client_for(c) as client:
        yield client


async def search(http: httpx.AsyncClient, kid: str, query: str) -> list[dict[str, Any]]:
    kb = (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]["knowledge_base_id"]
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={"query_text": query})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["data"]
    return found


@pytest.mark.parametrize(("lines", "query", "answer"), [
    (["Meeting notes, 3 March", "The backup password for the archive server is kept in safe 7."],
     "Where is the backup password kept?", "safe 7"),
    (["会议纪要", "档案服务器的备份密码保存在七号保险柜里。"], "备份密码保存在哪里", "七号保险柜"),
], ids=["en", "zh"])
async def test_a_scanned_page_is_searchable_by_its_text(http: httpx.AsyncClient, lines: list[str],
                                                        query: str, answer: str) -> None:
    kid = await upload(http, "scan.png", scan_png(lines, height_in=None))
    k = await ended(http, kid)
    assert k["parse_status"] == "completed", k.get("error_message")
    hits = await search(http, kid, query)
    assert hits, "the scanned text was not indexed"
    assert answer in hits[0]["content"]
    assert hits[0]["chunk_metadata"]["page"] == 1


async def test_a_20000_pixel_square_image_fails_with_its_size(http: httpx.AsyncClient) -> None:
    kid = await upload(http, "huge.png", png_header(20_000, 20_000))
    k = await ended(http, kid)
    assert k["parse_status"] == "failed"
    assert "20000 × 20000 pixels" in k["error_message"]
    assert (await http.get("/health")).status_code == 200
