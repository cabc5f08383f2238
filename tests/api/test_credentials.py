"""The write-only credential subresources of model rows and MCP services, through the real app on SQLite: a
secret is set or cleared without resending the row, is never answered, and is the one the row then uses."""

from __future__ import annotations

import httpx
import pytest

from knora.root import Services
from tests.conftest import client_for
from tests.fakes.model_server import FakeModelServer

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"


async def _model(http: httpx.AsyncClient, fake: FakeModelServer) -> str:
    r = await http.post("/api/v1/models", json={
        "name": "fake-chat", "type": "KnowledgeQA", "source": "remote",
        "parameters": {"base_url": fake.base_url, "provider": "openai", "api_key": "first-key"}})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def _check(http: httpx.AsyncClient, fake: FakeModelServer, model_id: str) -> str:
    """The Authorization header the stored row's connection check sent."""
    r = await http.post("/api/v1/initialization/remote/check",
                        json={"modelName": "fake-chat", "baseUrl": fake.base_url, "modelId": model_id})
    assert r.status_code == 200, r.text
    return fake.headers[-1].get("authorization", "")


class TestModelCredentials:
    async def test_set_and_clear_the_api_key(self, sqlite_client: httpx.AsyncClient,
                                             fake: FakeModelServer) -> None:
        mid = await _model(sqlite_client, fake)
        r = await sqlite_client.put(f"/api/v1/models/{mid}/credentials", json={"api_key": "second-key"})
        assert r.status_code == 200, r.text
        assert r.json()["data"] == {"fields": {"api_key": {"configured": True}}}
        assert "second-key" not in r.text
        row = (await sqlite_client.get(f"/api/v1/models/{mid}")).json()["data"]
        assert row["credentials"] == {"api_key": {"configured": True}}
        assert "second-key" not in str(row)
        assert row["parameters"]["base_url"] == fake.base_url
        assert await _check(sqlite_client, fake, mid) == "Bearer second-key"

        r = await sqlite_client.delete(f"/api/v1/models/{mid}/credentials/api_key")
        assert r.status_code == 200, r.text
        assert r.json()["data"] == {"fields": {"api_key": {"configured": False}}}
        row = (await sqlite_client.get(f"/api/v1/models/{mid}")).json()["data"]
        assert row["credentials"] == {"api_key": {"configured": False}}
        assert await _check(sqlite_client, fake, mid) != "Bearer second-key"

    async def test_bad_input_and_unknown_rows(self, sqlite_client: httpx.AsyncClient,
                                              fake: FakeModelServer) -> None:
        mid = await _model(sqlite_client, fake)
        for body in ({}, {"api_key": ""}, {"api_key": 5}, {"app_secret": "x"}, [1]):
            r = await sqlite_client.put(f"/api/v1/models/{mid}/credentials", json=body)
            assert r.status_code == 400, (body, r.text)
            assert r.json()["success"] is False
        assert (await sqlite_client.delete(f"/api/v1/models/{mid}/credentials/app_secret")).status_code == 404
        assert (await sqlite_client.put(f"/api/v1/models/{MISSING}/credentials",
                                        json={"api_key": "k"})).status_code == 404
        assert (await sqlite_client.put("/api/v1/models/builtin-chat/credentials",
                                        json={"api_key": "k"})).status_code == 400
        builtin = await sqlite_client.delete("/api/v1/models/builtin-chat/credentials/api_key")
        assert builtin.status_code == 400

    async def test_another_tenant_cannot_touch_the_key(self, sqlite_client: httpx.AsyncClient,
                                                       sqlite_container: Services,
                                                       fake: FakeModelServer) -> None:
        mid = await _model(sqlite_client, fake)
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            assert (await other.put(f"/api/v1/models/{mid}/credentials",
                                    json={"api_key": "stolen"})).status_code == 404
            assert (await other.delete(f"/api/v1/models/{mid}/credentials/api_key")).status_code == 404
        assert await _check(sqlite_client, fake, mid) == "Bearer first-key"


async def _mcp(http: httpx.AsyncClient) -> str:
    r = await http.post("/api/v1/mcp-services", json={
        "name": "tools", "transport_type": "sse", "url": "http://127.0.0.1:9/sse",
        "auth_config": {"auth_type": "bearer"}})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


class TestMCPCredentials:
    async def test_set_and_clear_one_secret(self, sqlite_client: httpx.AsyncClient,
                                            sqlite_container: Services) -> None:
        sid = await _mcp(sqlite_client)
        listed = (await sqlite_client.get(f"/api/v1/mcp-services/{sid}")).json()["data"]
        assert listed["credentials"] == {"api_key": {"configured": False}, "token": {"configured": False}}

        r = await sqlite_client.put(f"/api/v1/mcp-services/{sid}/credentials", json={"token": "tok-1"})
        assert r.status_code == 200, r.text
        assert r.json()["data"] == {"fields": {"api_key": {"configured": False},
                                               "token": {"configured": True}}}
        got = (await sqlite_client.get(f"/api/v1/mcp-services/{sid}")).json()["data"]
        assert got["credentials"]["token"] == {"configured": True}
        assert "tok-1" not in str(got)
        stored = await sqlite_container.mcp_services.get(1, sid)
        assert stored.auth_config == {"auth_type": "bearer", "token": "tok-1"}  # the rest is kept

        r = await sqlite_client.put(f"/api/v1/mcp-services/{sid}/credentials", json={"api_key": "k-2"})
        assert r.json()["data"]["fields"] == {"api_key": {"configured": True}, "token": {"configured": True}}
        r = await sqlite_client.delete(f"/api/v1/mcp-services/{sid}/credentials/token")
        assert r.status_code == 200, r.text
        assert r.json()["data"]["fields"] == {"api_key": {"configured": True}, "token": {"configured": False}}
        stored = await sqlite_container.mcp_services.get(1, sid)
        assert stored.auth_config == {"auth_type": "bearer", "api_key": "k-2"}

    async def test_bad_input_and_other_tenants(self, sqlite_client: httpx.AsyncClient,
                                               sqlite_container: Services) -> None:
        sid = await _mcp(sqlite_client)
        for body in ({}, {"token": ""}, {"token": ["x"]}, {"password": "x"}):
            r = await sqlite_client.put(f"/api/v1/mcp-services/{sid}/credentials", json=body)
            assert r.status_code == 400, (body, r.text)
        not_secret = await sqlite_client.delete(f"/api/v1/mcp-services/{sid}/credentials/auth_type")
        assert not_secret.status_code == 404
        assert (await sqlite_client.put(f"/api/v1/mcp-services/{MISSING}/credentials",
                                        json={"token": "t"})).status_code == 404
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            assert (await other.put(f"/api/v1/mcp-services/{sid}/credentials",
                                    json={"token": "t"})).status_code == 404
            assert (await other.delete(f"/api/v1/mcp-services/{sid}/credentials/token")).status_code == 404
        assert (await sqlite_container.mcp_services.get(1, sid)).auth_config == {"auth_type": "bearer"}
