"""The settings page's parser and storage checks through the real app on SQLite: the parser setting Knora
has (none), the parser check (its registry), and storage checks that really write to the data directory."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from knora.root import Services

pytestmark = pytest.mark.integration

STORAGE_CHECKS = ("/api/v1/system/storage-engine-check", "/api/v1/storage-backends/test",
                  "/api/v1/storage-backends/builtin-local/test")


class TestParserEngineConfig:
    async def test_knora_has_no_engine_to_configure(self, sqlite_client: httpx.AsyncClient) -> None:
        got = await sqlite_client.get("/api/v1/tenants/kv/parser-engine-config")
        assert got.status_code == 200, got.text
        assert got.json()["data"] == {"chat_parser_engine_rules": [], "mineru_endpoint": "",
                                      "mineru_api_key": ""}
        empty = {"mineru_endpoint": "", "mineru_api_key": "", "mineru_enable_ocr": None,
                 "chat_parser_engine_rules": [], "mineru_enable_table": False}
        r = await sqlite_client.put("/api/v1/tenants/kv/parser-engine-config", json=empty)
        assert r.status_code == 200, r.text
        for body in ({"mineru_endpoint": "http://mineru:8000"}, {"mineru_enable_ocr": True},
                     {"chat_parser_engine_rules": [{"file_types": ["pdf"], "engine": "mineru"}]}):
            bad = await sqlite_client.put("/api/v1/tenants/kv/parser-engine-config", json=body)
            assert bad.status_code == 400, body
            assert next(iter(body)) in bad.json()["error"]["message"]
        assert (await sqlite_client.put("/api/v1/tenants/kv/parser-engine-config",
                                        content=b"[1]")).status_code == 400

    async def test_the_check_lists_the_parser_registry(self, sqlite_client: httpx.AsyncClient) -> None:
        listed = (await sqlite_client.get("/api/v1/system/parser-engines")).json()
        r = await sqlite_client.post("/api/v1/system/parser-engines/check", json={"mineru_endpoint": ""})
        assert r.status_code == 200, r.text
        assert r.json() == listed
        assert any("pdf" in e["FileTypes"] for e in r.json()["data"])
        refused = await sqlite_client.post("/api/v1/system/parser-engines/check",
                                           json={"mineru_endpoint": "http://mineru:8000"})
        assert refused.status_code == 400


class TestStorageChecks:
    async def test_a_writable_data_dir_passes(self, sqlite_client: httpx.AsyncClient,
                                              sqlite_container: Services) -> None:
        blobs = Path(sqlite_container.settings.data_dir) / "blobs"
        for path in STORAGE_CHECKS:
            r = await sqlite_client.post(path, json={"provider": "local"})
            assert r.status_code == 200, (path, r.text)
            assert r.json()["data"]["ok"] is True, path
        assert not [p for p in blobs.rglob("*") if p.is_file()]  # each probe was removed

    async def test_a_store_that_cannot_write_fails_with_the_reason(self, sqlite_client: httpx.AsyncClient,
                                                                   sqlite_container: Services) -> None:
        # a file where the probe's folder goes: the write fails as on a full or read-only disk (also as root)
        (Path(sqlite_container.settings.data_dir) / "blobs" / "storage-check").write_bytes(b"")
        r = await sqlite_client.post("/api/v1/system/storage-engine-check", json={})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["ok"] is False
        assert "not writable" in r.json()["data"]["message"]

    async def test_other_providers_and_backends_are_refused(self, sqlite_client: httpx.AsyncClient) -> None:
        for path in STORAGE_CHECKS[:2]:
            r = await sqlite_client.post(path, json={"provider": "minio", "minio": {"bucket_name": "b"}})
            assert r.status_code == 400, path
            assert "minio" in r.json()["error"]["message"]
            assert (await sqlite_client.post(path, json={"provider": 3})).status_code == 400
        assert (await sqlite_client.post("/api/v1/storage-backends/other/test")).status_code == 404
