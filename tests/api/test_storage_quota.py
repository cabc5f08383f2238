"""The tenant storage quota over HTTP, on SQLite and PostgreSQL: uploads and manual documents past it are
refused (403, code 1002, the figures in ``details``), a URL import past it fails with the reason once its size
is known, deleting makes room, and the tenant JSON carries ``storage_quota`` / ``storage_used``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from knora.root import Services
from knora.settings import Settings
from tests.conftest import RECORDING, client_for, started
from tests.fakes.web_site import Page, serve

pytestmark = pytest.mark.integration

QUOTA = 1000
PAGE = b"<html><head><title>Big</title></head><body><p>" + b"otters " * 80 + b"</p></body></html>"  # 613 B


@pytest.fixture
def site() -> Iterator[str]:
    with serve({}, default=Page(PAGE)) as base:
        yield f"{base}/page.html"


@pytest.fixture
async def quota_container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Services]:
    settings = make_settings(database_url=db_url, allow_private_network_fetch=True,
                             tenant_storage_quota_bytes=QUOTA)
    async with started(settings, RECORDING) as c:
        yield c


def _text(n: int, word: str = "quota") -> bytes:
    return (f"# {word}\n\n" + f"{word} " * n).encode()[:n]


async def _kb(http: httpx.AsyncClient) -> str:
    return (await http.post("/api/v1/knowledge-bases", json={"name": "Docs"})).json()["data"]["id"]  # type: ignore[no-any-return]


async def _upload(http: httpx.AsyncClient, kb: str, name: str, data: bytes) -> httpx.Response:
    return await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)})


_QUOTA_FIELDS = ("id", "name", "storage_quota", "storage_used")


async def _tenant(http: httpx.AsyncClient) -> dict[str, Any]:
    """The tenant's quota fields as ``/auth/me`` gives them."""
    tenant = (await http.get("/api/v1/auth/me")).json()["data"]["tenant"]
    return {k: tenant[k] for k in _QUOTA_FIELDS}


async def test_documents_past_the_quota_are_refused(quota_container: Services, site: str) -> None:
    c = quota_container
    async with client_for(c) as http:
        kb = await _kb(http)
        first = await _upload(http, kb, "a.md", _text(600, "alpha"))
        assert first.status_code == 200, first.text
        assert await _tenant(http) == {"id": c.default_tenant_id, "name": "default", "storage_quota": QUOTA,
                                       "storage_used": 600}

        refused = await _upload(http, kb, "b.md", _text(500, "beta"))
        assert refused.status_code == 403
        err = refused.json()["error"]
        assert err["code"] == 1002
        assert "Storage quota exceeded" in err["message"]
        assert err["details"] == {"storage_quota": QUOTA, "storage_used": 600, "size": 500}
        manual = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                                 json={"title": "m", "content": _text(500, "gamma").decode()})
        assert manual.status_code == 403
        small = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                                json={"title": "m", "content": _text(300, "delta").decode()})
        assert small.status_code == 200, small.text
        assert (await _tenant(http))["storage_used"] == 900

        # the page's 613 bytes are known after the fetch: the document fails with the reason
        url = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url", json={"url": site})
        assert url.status_code == 201, url.text
        await c.jobs.wait_idle(30)
        doc = (await http.get(f"/api/v1/knowledge/{url.json()['data']['id']}")).json()["data"]
        assert doc["parse_status"] == "failed"
        assert "Storage quota exceeded" in doc["error_message"]
        assert (await _tenant(http))["storage_used"] == 900

        # deleting makes room
        assert (await http.delete(f"/api/v1/knowledge/{first.json()['data']['id']}")).status_code == 200
        again = await _upload(http, kb, "b.md", _text(500, "beta"))
        assert again.status_code == 200, again.text
        assert (await _tenant(http))["storage_used"] == 800


async def test_a_url_import_with_no_room_is_refused_at_once(quota_container: Services, site: str) -> None:
    async with client_for(quota_container) as http:
        kb = await _kb(http)
        assert (await _upload(http, kb, "full.md", _text(QUOTA))).status_code == 200
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url", json={"url": site})
        assert r.status_code == 403
        assert r.json()["error"]["code"] == 1002


async def test_no_quota_by_default(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings(), RECORDING) as c, client_for(c) as http:
        kb = await _kb(http)
        assert (await _upload(http, kb, "a.md", _text(5000))).status_code == 200
        assert await _tenant(http) == {"id": c.default_tenant_id, "name": "default", "storage_quota": 0,
                                       "storage_used": 5000}
