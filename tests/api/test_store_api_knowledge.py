"""Documents and chunks over HTTP: upload / URL / manual, parse-status polling, duplicates, limits, re-parse,
chunk editing, and deletion (api §1.5 "Knowledge", "Chunks")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for, record_retrieval
from tests.fakes.web_site import Page, serve

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"
DOC = ("# Knora guide\n\n" + "\n\n".join(f"Section {i}: Knora answers questions with citations. " * 4
                                         for i in range(6))).encode()


async def _kb(http: httpx.AsyncClient, **body: Any) -> str:
    r = await http.post("/api/v1/knowledge-bases", json={"name": "Docs", **body})
    return r.json()["data"]["id"]  # type: ignore[no-any-return]


async def _upload(http: httpx.AsyncClient, kb: str, name: str = "guide.md", data: bytes = DOC,
                  **form: str) -> httpx.Response:
    return await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)},
                           data=form)


class TestUpload:
    async def test_upload_poll_list_get_and_chunks(self, store_container: Any,
                                                   store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client, chunking_config={"chunk_size": 120, "chunk_overlap": 20})
        r = await _upload(store_client, kb, metadata='{"team": "docs"}')
        assert r.status_code == 200, r.text
        k = r.json()["data"]
        assert k["parse_status"] in ("pending", "processing")
        assert k["metadata"] == {"team": "docs"}
        await store_container.jobs.wait_idle(30)
        listed = (await store_client.get(f"/api/v1/knowledge-bases/{kb}/knowledge",
                                         params={"page": 1, "page_size": 10})).json()
        assert listed["total"] == 1
        assert listed["page"] == 1
        assert listed["page_size"] == 10
        assert listed["data"][0]["parse_status"] == "completed"
        assert listed["data"][0]["title"] == "Knora guide"
        got = (await store_client.get(f"/api/v1/knowledge/{k['id']}")).json()["data"]
        assert got["processed_at"].endswith("Z")
        chunks = (await store_client.get(f"/api/v1/chunks/{k['id']}", params={"page_size": 2})).json()
        assert chunks["total"] > 2
        assert len(chunks["data"]) == 2
        assert chunks["data"][0]["chunk_index"] == 0
        kbs = (await store_client.get("/api/v1/knowledge-bases")).json()["data"]
        assert kbs[0]["knowledge_count"] == 1
        assert kbs[0]["chunk_count"] == chunks["total"]
        assert (await store_client.get(f"/api/v1/knowledge/{k['id']}/download")).content == DOC

    async def test_duplicate_upload_is_409_with_the_existing_document(self,
                                                                      lite_client: httpx.AsyncClient) -> None:
        kb = await _kb(lite_client)
        first = (await _upload(lite_client, kb)).json()["data"]
        body = _err(await _upload(lite_client, kb, "again.md"), 409)
        assert body["code"] == "duplicate_file"
        assert body["data"]["id"] == first["id"]
        assert body["message"]

    async def test_upload_limits_and_bad_files(self, lite_client: httpx.AsyncClient) -> None:
        kb = await _kb(lite_client)
        _err(await _upload(lite_client, kb, "big.txt", b"x" * 50_001), 413)
        _err(await _upload(lite_client, kb, "huge.txt", b"x" * 200_000), 413)
        _err(await _upload(lite_client, kb, "virus.exe", b"MZ"), 400)
        _err(await _upload(lite_client, kb, "empty.txt", b""), 400)
        _err(await lite_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", data={"x": "1"},
                                    files={"other": ("a.txt", b"a")}), 400)
        _err(await lite_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", json={"file": "a"}), 400)
        _err(await _upload(lite_client, kb, metadata="{not json"), 400)
        _err(await _upload(lite_client, MISSING), 404)
        _err(await _upload(lite_client, "../etc"), 404)
        assert (await lite_client.get(f"/api/v1/knowledge-bases/{kb}/knowledge")).json()["total"] == 0

    async def test_traversal_name_is_reduced_to_a_safe_base_name(self,
                                                                 lite_client: httpx.AsyncClient) -> None:
        kb = await _kb(lite_client)
        k = (await _upload(lite_client, kb, "../../secret/notes.txt", b"hello there")).json()["data"]
        assert k["file_name"] == "notes.txt"

    async def test_corrupt_docx_ends_failed_with_reason(self, lite_container: Any,
                                                        lite_client: httpx.AsyncClient) -> None:
        kb = await _kb(lite_client)
        k = (await _upload(lite_client, kb, "broken.docx",
                           b"PK\x03\x04 definitely not a docx")).json()["data"]
        await lite_container.jobs.wait_idle(30)
        got = (await lite_client.get(f"/api/v1/knowledge/{k['id']}")).json()["data"]
        assert got["parse_status"] == "failed"
        assert got["error_message"]
        failed = (await lite_client.get(f"/api/v1/knowledge-bases/{kb}/knowledge",
                                        params={"parse_status": "failed"})).json()
        assert failed["total"] == 1


class TestManualUrlReparseDelete:
    async def test_manual_then_reparse_then_delete(self, store_container: Any,
                                                   store_client: httpx.AsyncClient) -> None:
        rec = record_retrieval(store_container)
        kb = await _kb(store_client)
        r = await store_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                                    json={"title": "FAQ", "content": "Q: what is Knora?\n\nA RAG engine.",
                                          "status": "publish"})
        assert r.status_code == 200
        assert r.json()["data"]["type"] == "manual"
        assert r.json()["data"]["file_type"] == "md"
        kid = r.json()["data"]["id"]
        await store_container.jobs.wait_idle(30)
        first = {c["id"] for c in (await store_client.get(f"/api/v1/chunks/{kid}")).json()["data"]}
        assert first
        assert set(rec.rows) == first
        r = await store_client.post(f"/api/v1/knowledge/{kid}/reparse")
        assert r.status_code == 200
        assert r.json()["data"]["parse_status"] in ("pending", "processing", "completed")
        await store_container.jobs.wait_idle(30)
        second = {c["id"] for c in (await store_client.get(f"/api/v1/chunks/{kid}")).json()["data"]}
        assert second
        assert not first & second
        assert set(rec.rows) == second
        r = await store_client.delete(f"/api/v1/knowledge/{kid}")
        assert r.json()["success"] is True
        assert r.json()["data"]["task_id"] == kid
        _err(await store_client.get(f"/api/v1/knowledge/{kid}"), 404)
        assert rec.rows == {}
        _err(await store_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json={"content": " "}),
             400)
        _err(await store_client.post(f"/api/v1/knowledge/{MISSING}/reparse"), 404)

    async def test_url_is_201_and_fetched(self, store_container: Any, store_client: httpx.AsyncClient,
                                          site: str) -> None:
        kb = await _kb(store_client)
        r = await store_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url",
                                    json={"url": f"{site}/a.html"})
        assert r.status_code == 201
        assert r.json()["data"]["type"] == "url"
        body = _err(await store_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url",
                                            json={"url": f"{site}/a.html"}), 409)
        assert body["code"] == "duplicate_url"
        _err(await store_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url",
                                     json={"url": "ftp://x/y"}), 400)
        _err(await store_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url", json={}), 400)
        await store_container.jobs.wait_idle(30)
        got = (await store_client.get(f"/api/v1/knowledge/{r.json()['data']['id']}")).json()["data"]
        assert got["parse_status"] == "completed", got["error_message"]

    async def test_url_to_loopback_is_refused_by_default(self, lite_client: httpx.AsyncClient,
                                                         site: str) -> None:
        kb = await _kb(lite_client)
        _err(await lite_client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url",
                                    json={"url": f"{site}/a.html"}), 400)


class TestChunksAndTenancy:
    async def test_chunk_get_edit_delete(self, store_container: Any, store_client: httpx.AsyncClient) -> None:
        rec = record_retrieval(store_container)
        kb = await _kb(store_client)
        kid = (await _upload(store_client, kb, "n.txt", b"Chunk about otters.")).json()["data"]["id"]
        await store_container.jobs.wait_idle(30)
        chunk = (await store_client.get(f"/api/v1/chunks/{kid}")).json()["data"][0]
        one = (await store_client.get(f"/api/v1/chunks/{kid}/{chunk['id']}")).json()["data"]
        assert one["content"] == "Chunk about otters."
        by_id = (await store_client.get(f"/api/v1/chunks/by-id/{chunk['id']}")).json()["data"]
        assert by_id["id"] == chunk["id"]
        r = await store_client.put(f"/api/v1/chunks/{kid}/{chunk['id']}",
                                   json={"content": "Chunk about beavers."})
        assert r.json()["data"]["content"] == "Chunk about beavers."
        assert "beavers" in rec.rows[chunk["id"]].content
        _err(await store_client.put(f"/api/v1/chunks/{kid}/{chunk['id']}", json={"is_enabled": "no"}), 400)
        _err(await store_client.put(f"/api/v1/chunks/{kid}/{MISSING}", json={"content": "x"}), 404)
        assert (await store_client.delete(f"/api/v1/chunks/{kid}/{chunk['id']}")).status_code == 200
        assert (await store_client.get(f"/api/v1/chunks/{kid}")).json() == {
            "success": True, "data": [], "total": 0, "page": 1, "page_size": 20}
        _err(await store_client.get(f"/api/v1/chunks/{MISSING}"), 404)

    async def test_another_tenant_cannot_touch_documents(self, store_container: Any,
                                                         store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client)
        kid = (await _upload(store_client, kb, "n.txt", b"Private words.")).json()["data"]["id"]
        await store_container.jobs.wait_idle(30)
        chunk = (await store_client.get(f"/api/v1/chunks/{kid}")).json()["data"][0]
        _, key = await store_container.tenants.create("intruder")
        async with client_for(store_container, **{"X-API-Key": key}) as other:
            _err(await other.get(f"/api/v1/knowledge/{kid}"), 404)
            _err(await other.delete(f"/api/v1/knowledge/{kid}"), 404)
            _err(await other.get(f"/api/v1/chunks/{kid}"), 404)
            _err(await other.get(f"/api/v1/chunks/by-id/{chunk['id']}"), 404)
            _err(await other.put(f"/api/v1/chunks/{kid}/{chunk['id']}", json={"content": "mine"}), 404)
            _err(await _upload(other, kb), 404)
            _err(await other.get(f"/api/v1/knowledge-bases/{kb}/knowledge"), 404)
        assert (await store_client.get(f"/api/v1/knowledge/{kid}")).status_code == 200


OTTERS = Page(b"<html><head><title>Otters</title></head>"
              b"<body><p>Otters hold hands while sleeping.</p></body></html>")


@pytest.fixture
def site() -> Iterator[str]:
    with serve({}, default=OTTERS) as base:
        yield base
