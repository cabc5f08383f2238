"""Auth, knowledge bases, tags, models and system endpoints over HTTP (api §1, §6(a))."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"


async def _kb(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await http.post("/api/v1/knowledge-bases", json={"name": "Docs", **body})
    assert r.status_code == 201, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


class TestAuth:
    async def test_missing_and_wrong_keys_are_401(self, lite_container: Any) -> None:
        async with client_for(lite_container, **{"X-API-Key": ""}) as http:
            _err(await http.get("/api/v1/knowledge-bases"), 401)
        async with client_for(lite_container, **{"X-API-Key": "sk-wrong"}) as http:
            _err(await http.get("/api/v1/knowledge-bases"), 401)

    async def test_bearer_token_authenticates(self, lite_container: Any) -> None:
        async with client_for(lite_container, **{"X-API-Key": "",
                                               "Authorization": "Bearer sk-test-key"}) as http:
            assert (await http.get("/api/v1/knowledge-bases")).status_code == 200

    async def test_unknown_route_is_404_not_401(self, lite_container: Any) -> None:
        async with client_for(lite_container, **{"X-API-Key": ""}) as http:
            assert (await http.get("/api/v1/no-such-thing")).status_code == 404


class TestKnowledgeBases:
    async def test_crud_with_counts(self, store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client, description="d", chunking_config={"chunk_size": 256,
                                                                       "chunk_overlap": 30},
                       unknown_field="ignored")
        assert kb["chunking_config"]["chunk_size"] == 256
        assert kb["created_at"].endswith("Z")
        listed = (await store_client.get("/api/v1/knowledge-bases")).json()["data"]
        assert [x["id"] for x in listed] == [kb["id"]]
        assert listed[0]["knowledge_count"] == 0
        assert listed[0]["chunk_count"] == 0
        r = await store_client.put(f"/api/v1/knowledge-bases/{kb['id']}",
                                   json={"name": "Renamed",
                                         "config": {"chunking_config": {"chunk_size": 128}}})
        assert r.status_code == 200
        assert r.json()["data"]["name"] == "Renamed"
        assert r.json()["data"]["chunking_config"] == {**kb["chunking_config"], "chunk_size": 128}
        got = (await store_client.get(f"/api/v1/knowledge-bases/{kb['id']}")).json()["data"]
        assert got["name"] == "Renamed"
        r = await store_client.delete(f"/api/v1/knowledge-bases/{kb['id']}")
        assert r.json() == {"success": True, "message": "Knowledge base deleted successfully"}
        _err(await store_client.get(f"/api/v1/knowledge-bases/{kb['id']}"), 404)
        assert (await store_client.get("/api/v1/knowledge-bases")).json()["data"] == []

    @pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": "x", "type": "wiki"},
                                      {"name": "x", "chunking_config": "big"},
                                      {"name": "x", "chunking_config": {"chunk_size": "huge"}}])
    async def test_invalid_bodies_are_400(self, lite_client: httpx.AsyncClient, body: dict[str, Any]) -> None:
        _err(await lite_client.post("/api/v1/knowledge-bases", json=body), 400)

    async def test_malformed_json_is_400(self, lite_client: httpx.AsyncClient) -> None:
        r = await lite_client.post("/api/v1/knowledge-bases", content=b'{"name": ',
                                   headers={"Content-Type": "application/json"})
        _err(r, 400)
        _err(await lite_client.post("/api/v1/knowledge-bases", json=["a"]), 400)

    async def test_bad_and_unknown_ids_are_404(self, lite_client: httpx.AsyncClient) -> None:
        for path in ("/api/v1/knowledge-bases/not-a-uuid", f"/api/v1/knowledge-bases/{MISSING}"):
            _err(await lite_client.get(path), 404)
            _err(await lite_client.delete(path), 404)

    async def test_another_tenants_kb_is_404(self, store_container: Any,
                                             store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client)
        _, key = await store_container.tenants.create("intruder")
        async with client_for(store_container, **{"X-API-Key": key}) as other:
            _err(await other.get(f"/api/v1/knowledge-bases/{kb['id']}"), 404)
            _err(await other.put(f"/api/v1/knowledge-bases/{kb['id']}", json={"name": "mine"}), 404)
            _err(await other.delete(f"/api/v1/knowledge-bases/{kb['id']}"), 404)
            assert (await other.get("/api/v1/knowledge-bases")).json()["data"] == []
            _err(await other.get(f"/api/v1/knowledge-bases/{kb['id']}/tags"), 404)
        assert (await store_client.get(f"/api/v1/knowledge-bases/{kb['id']}")).status_code == 200

    async def test_shared_list_exists_and_is_empty(self, lite_client: httpx.AsyncClient) -> None:
        assert (await lite_client.get("/api/v1/shared-knowledge-bases")).json() == {"success": True,
                                                                                    "data": []}


class TestTags:
    async def test_crud_nested_pagination_and_force_delete(self, store_client: httpx.AsyncClient) -> None:
        kb = await _kb(store_client)
        base = f"/api/v1/knowledge-bases/{kb['id']}/tags"
        red = (await store_client.post(base, json={"name": "red", "color": "#f00"})).json()["data"]
        _err(await store_client.post(base, json={"name": "red"}), 409)
        _err(await store_client.post(base, json={"name": ""}), 400)
        await store_client.post(base, json={"name": "blue", "sort_order": 1})
        page = (await store_client.get(base, params={"page": 1, "page_size": 1})).json()["data"]
        assert page["total"] == 2
        assert page["page_size"] == 1
        assert len(page["data"]) == 1
        assert page["data"][0]["name"] == "red"
        assert page["data"][0]["knowledge_count"] == 0
        r = await store_client.put(f"{base}/{red['id']}", json={"name": "crimson"})
        assert r.json()["data"]["name"] == "crimson"
        await store_client.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                                json={"title": "t", "content": "tagged text", "tag_id": red["id"],
                                      "status": "draft"})
        _err(await store_client.delete(f"{base}/{red['id']}"), 409)
        assert (await store_client.delete(f"{base}/{red['id']}", params={"force": "true"})).status_code == 200
        assert (await store_client.get(base)).json()["data"]["total"] == 1
        _err(await store_client.delete(f"{base}/{MISSING}"), 404)


class TestModels:
    async def test_crud_aliases_and_no_api_key_leaves(self, store_client: httpx.AsyncClient) -> None:
        r = await store_client.post("/api/v1/models", json={
            "name": "gpt-4o-mini", "type": "chat", "source": "remote",
            "parameters": {"base_url": "https://api.example.com/v1", "api_key": "sk-secret"}})
        assert r.status_code == 201, r.text
        m = r.json()["data"]
        assert m["type"] == "KnowledgeQA"
        assert "sk-secret" not in r.text
        assert "api_key" not in m["parameters"]
        assert m["credentials"]["api_key"]["configured"] is True
        listed = (await store_client.get("/api/v1/models")).json()["data"]
        assert {"builtin-chat", "builtin-embedding", m["id"]} <= {x["id"] for x in listed}
        assert "sk-secret" not in (await store_client.get("/api/v1/models")).text
        r = await store_client.put(f"/api/v1/models/{m['id']}", json={"display_name": "Mini",
                                                                      "type": "rerank"})
        assert r.json()["data"]["display_name"] == "Mini"
        assert r.json()["data"]["type"] == "Rerank"
        assert (await store_client.get(f"/api/v1/models/{m['id']}")).json()["data"]["name"] == "gpt-4o-mini"
        assert (await store_client.delete(f"/api/v1/models/{m['id']}")).status_code == 200
        _err(await store_client.get(f"/api/v1/models/{m['id']}"), 404)

    async def test_bad_model_input(self, lite_client: httpx.AsyncClient) -> None:
        _err(await lite_client.post("/api/v1/models", json={"name": "x", "type": "painter"}), 400)
        _err(await lite_client.post("/api/v1/models", json={"type": "chat"}), 400)
        _err(await lite_client.delete("/api/v1/models/builtin-chat"), 400)
        embedding = (await lite_client.get("/api/v1/models/builtin-embedding")).json()["data"]
        assert embedding["type"] == "Embedding"


class TestSystem:
    async def test_info_capabilities_and_kv(self, lite_client: httpx.AsyncClient) -> None:
        info = (await lite_client.get("/api/v1/system/info")).json()["data"]
        assert info["version"]
        assert info["vector_store_engine"] == "sqlite"
        caps = (await lite_client.get("/api/v1/system/capabilities")).json()["data"]["capabilities"]
        assert caps["organizations"]["supported"] is False
        assert (await lite_client.get("/api/v1/tenants/kv/retrieval-config")).json()["success"] is True
        _err(await lite_client.get("/api/v1/tenants/kv/nope"), 404)

    async def test_auto_setup_logs_the_web_ui_in(self, lite_container: Any) -> None:
        async with client_for(lite_container, **{"X-API-Key": ""}) as anon:
            assert (await anon.get("/api/v1/auth/config")).json()["success"] is True
            body = (await anon.post("http://localhost/api/v1/auth/auto-setup", json={})).json()
            assert body["success"] is True
            assert body["token"]
            assert body["tenant"]["id"] == body["active_tenant"]["id"] == lite_container.default_tenant_id
            assert body["memberships"][0]["role"] == "owner"
            headers = {"Authorization": f"Bearer {body['token']}"}
            me = (await anon.get("/api/v1/auth/me", headers=headers)).json()["data"]
            assert me["tenant"]["id"] == lite_container.default_tenant_id
            assert me["tenant_required"] is False
            r = await anon.post("/api/v1/auth/refresh", json={"refreshToken": body["token"]})
            assert r.json()["access_token"] == body["token"]
            _err(await anon.post("/api/v1/auth/refresh", json={"refreshToken": "bad"}), 401)
