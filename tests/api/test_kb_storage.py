"""Issue 13 item 1: a knowledge base names its storage as WeKnora's web UI requires
(``storage_provider_config``, ``storage_backend_id``), and the storage routes the UI reads answer with what
Knora has — local files."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.integration

API = "/api/v1"
LOCAL = {"provider": "local"}


def _missing_storage_engine(kb: dict[str, Any]) -> bool:
    """The web UI's ``missingStorageEngine`` (views/knowledge/KnowledgeBase.vue): uploads are refused when
    true."""
    if kb.get("type") == "faq":
        return False
    if kb.get("storage_backend_id"):
        return False
    spc = kb.get("storage_provider_config")
    return not spc or not spc.get("provider")


async def _kb(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await http.post(f"{API}/knowledge-bases", json={"name": "Docs", **body})
    assert r.status_code == 201, r.text
    return dict(r.json()["data"])


class TestKnowledgeBaseStorage:
    async def test_a_new_kb_is_bound_to_local_storage(self, store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client)
        assert kb["storage_provider_config"] == LOCAL
        assert kb["storage_backend_id"] == "builtin-local"
        assert not _missing_storage_engine(kb)
        for got in ((await store_client.get(f"{API}/knowledge-bases/{kb['id']}")).json()["data"],
                    (await store_client.get(f"{API}/knowledge-bases")).json()["data"][0]):
            assert got["storage_provider_config"] == LOCAL
            assert not _missing_storage_engine(got)

    async def test_the_ui_create_body_is_accepted(self, store_client: httpx.AsyncClient) -> None:
        """The create form sends the provider twice: the current field and the legacy ``storage_config``."""
        kb = await _kb(store_client, storage_provider_config={"provider": "local"},
                       storage_config={"provider": "local"}, storage_backend_id="builtin-local")
        assert kb["storage_provider_config"] == LOCAL

    @pytest.mark.parametrize("body", [
        {"storage_provider_config": {"provider": "minio"}},
        {"storage_provider_config": {"provider": 3}},
        {"storage_provider_config": "local"},
        {"storage_config": {"provider": "cos"}},
        {"storage_backend_id": "3f1c9a8e-0000-4000-8000-000000000000"},
    ])
    async def test_storage_knora_lacks_is_a_400(self, store_client: httpx.AsyncClient,
                                               body: dict[str, Any]) -> None:
        r = await store_client.post(f"{API}/knowledge-bases", json={"name": "Docs", **body})
        assert r.status_code == 400, r.text
        assert r.json()["success"] is False
        assert r.json()["error"]["message"]
        kb = await _kb(store_client)
        r = await store_client.put(f"{API}/knowledge-bases/{kb['id']}", json=body)
        assert r.status_code == 400, r.text
        assert r.json()["success"] is False

    async def test_an_update_keeps_and_accepts_the_binding(self, store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client)
        r = await store_client.put(f"{API}/knowledge-bases/{kb['id']}", json={"name": "Renamed"})
        assert r.json()["data"]["storage_provider_config"] == LOCAL
        r = await store_client.put(f"{API}/knowledge-bases/{kb['id']}",
                                   json={"storage_provider_config": {"provider": "LOCAL"}})
        assert r.status_code == 200, r.text
        again = (await store_client.get(f"{API}/knowledge-bases/{kb['id']}")).json()["data"]
        assert again["storage_provider_config"] == LOCAL
        assert again["name"] == "Renamed"


class TestStorageRoutes:
    async def test_storage_backends_lists_the_one_backend(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get(f"{API}/storage-backends")
        assert r.status_code == 200
        body = r.json()
        assert body["default_storage_backend_id"] == "builtin-local"
        [backend] = body["data"]
        assert backend["id"] == "builtin-local"
        assert backend["provider"] == "local"
        assert backend["status"] == "active"
        assert isinstance(backend["config"], dict)
        assert isinstance(backend["tenant_id"], int)
        assert backend["created_at"].startswith("20")
        r = await sqlite_client.get(f"{API}/storage-backends/builtin-local")
        assert r.json()["data"] == backend
        assert (await sqlite_client.get(f"{API}/storage-backends/types")).json()["data"] == ["local"]

    async def test_unknown_backends_and_changes_are_refused(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get(f"{API}/storage-backends/nope")
        assert r.status_code == 404
        assert r.json()["success"] is False
        for method, path in (("POST", "/storage-backends"), ("PUT", "/storage-backends/builtin-local"),
                             ("DELETE", "/storage-backends/builtin-local"),
                             ("PUT", "/storage-backends/builtin-local/default")):
            r = await sqlite_client.request(method, f"{API}{path}", json={"name": "s3", "provider": "s3"})
            assert r.status_code == 400, (method, path, r.text)
            assert r.json()["success"] is False

    async def test_storage_engine_status(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get(f"{API}/system/storage-engine-status")
        assert r.status_code == 200
        data = r.json()["data"]
        assert data["engines"] == [{"name": "local", "allowed": True, "available": True,
                                    "description": data["engines"][0]["description"]}]
        assert data["allowed_providers"] == ["local"]
        assert data["minio_env_available"] is False

    async def test_storage_engine_config_round_trip(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get(f"{API}/tenants/kv/storage-engine-config")
        assert r.status_code == 200
        config = r.json()["data"]
        assert config == {"default_provider": "local", "local": {"path_prefix": ""}}
        # the settings page sends every provider's section back, the others empty
        sent = {**config, "minio": {"endpoint": "", "bucket_name": ""}, "cos": {"secret_id": ""}}
        r = await sqlite_client.put(f"{API}/tenants/kv/storage-engine-config", json=sent)
        assert r.status_code == 200, r.text
        assert r.json()["data"] == config

    @pytest.mark.parametrize("body", [{"default_provider": "minio"}, {"local": {"path_prefix": "/srv"}},
                                      {"local": "x"}, {"default_provider": ["local"]}])
    async def test_storage_engine_config_knora_lacks_is_a_400(self, sqlite_client: httpx.AsyncClient,
                                                             body: dict[str, Any]) -> None:
        r = await sqlite_client.put(f"{API}/tenants/kv/storage-engine-config", json=body)
        assert r.status_code == 400, r.text
        assert r.json()["success"] is False

    async def test_other_tenant_settings_are_still_served(self, sqlite_client: httpx.AsyncClient) -> None:
        """The storage router sits before the system router's ``/tenants/kv/{key}``; the rest still works."""
        assert (await sqlite_client.get(f"{API}/tenants/kv/retrieval-config")).status_code == 200
        assert (await sqlite_client.get(f"{API}/tenants/kv/nope")).status_code == 404

    async def test_capabilities_advertise_storage(self, sqlite_client: httpx.AsyncClient) -> None:
        caps = (await sqlite_client.get(f"{API}/system/capabilities")).json()["data"]["capabilities"]
        assert caps["settings.storage"] == {"supported": True}
