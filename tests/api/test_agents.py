"""/agents, /mcp-services and tool approvals over HTTP (api §1.5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.adapters.mcp.server import mcp_server
from tests.conftest import client_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with mcp_server() as (url, _state):
        yield url


def data(r: httpx.Response) -> Any:
    assert r.json()["success"] is True, r.text
    return r.json()["data"]


class TestAgents:
    async def test_builtins_are_listed_with_a_ready_chat_model(self,
                                                               sqlite_client: httpx.AsyncClient) -> None:
        agents = {a["id"]: a for a in data(await sqlite_client.get("/api/v1/agents"))}
        assert {"builtin-quick-answer", "builtin-smart-reasoning"} <= set(agents)
        smart = agents["builtin-smart-reasoning"]
        assert smart["is_builtin"]
        assert smart["config"]["agent_mode"] == "smart-reasoning"
        assert smart["config"]["max_iterations"] == 50
        assert smart["config"]["allowed_tools"] == ["knowledge_search", "grep_chunks",
                                                    "list_knowledge_chunks",
                                                    "query_knowledge_graph", "get_document_info"]
        models = data(await sqlite_client.get("/api/v1/models"))
        chat_ids = {m["id"] for m in models if m["type"] == "KnowledgeQA"}
        assert agents["builtin-quick-answer"]["config"]["model_id"] in chat_ids
        assert smart["config"]["model_id"] in chat_ids

    async def test_builtins_keep_their_created_at_between_requests(self,
                                                                 sqlite_client: httpx.AsyncClient) -> None:
        async def stamps() -> dict[str, tuple[str, str]]:
            agents = data(await sqlite_client.get("/api/v1/agents"))
            models = data(await sqlite_client.get("/api/v1/models"))
            return {x["id"]: (x["created_at"], x["updated_at"]) for x in agents + models if x["is_builtin"]}

        first = await stamps()
        assert {"builtin-quick-answer", "builtin-chat", "builtin-embedding"} <= set(first)
        assert await stamps() == first
        one = data(await sqlite_client.get("/api/v1/agents/builtin-quick-answer"))
        assert (one["created_at"], one["updated_at"]) == first["builtin-quick-answer"]

    async def test_crud_copy_and_validation(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.post("/api/v1/agents", json={"name": "Analyst", "config": {
            "agent_mode": "smart-reasoning", "agent_type": "data-analysis"}})
        assert r.status_code == 201
        agent = data(r)
        assert agent["config"]["allowed_tools"] == ["data_schema", "data_analysis"]
        assert agent["config"]["citation_enabled"] is True  # EnsureDefaults
        aid = agent["id"]
        r = await sqlite_client.put(f"/api/v1/agents/{aid}", json={"config": {"max_iterations": 7}})
        assert data(r)["config"]["max_iterations"] == 7
        assert data(r)["config"]["allowed_tools"]
        bad = await sqlite_client.put(f"/api/v1/agents/{aid}", json={"config": {"max_iterations": 101}})
        assert bad.status_code == 400
        assert "max iterations too high" in bad.json()["error"]["message"]
        copy = data(await sqlite_client.post(f"/api/v1/agents/{aid}/copy"))
        assert copy["id"] != aid
        assert copy["config"]["max_iterations"] == 7
        assert (await sqlite_client.delete(f"/api/v1/agents/{aid}")).status_code == 200
        assert (await sqlite_client.get(f"/api/v1/agents/{aid}")).status_code == 404
        assert (await sqlite_client.delete("/api/v1/agents/builtin-quick-answer")).status_code == 403
        assert (await sqlite_client.post("/api/v1/agents", json={"config": {}})).status_code == 400

    async def test_builtin_edits_are_kept_per_tenant(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.put("/api/v1/agents/builtin-smart-reasoning",
                                    json={"config": {"max_iterations": 12, "allowed_tools": ["grep_chunks"]}})
        assert data(r)["id"] == "builtin-smart-reasoning"
        again = data(await sqlite_client.get("/api/v1/agents/builtin-smart-reasoning"))
        assert again["config"]["max_iterations"] == 12
        assert again["config"]["allowed_tools"] == ["grep_chunks"]
        assert again["config"]["temperature"] == 0.7
        listed = [a for a in data(await sqlite_client.get("/api/v1/agents"))
                  if a["id"] == "builtin-smart-reasoning"]
        assert len(listed) == 1
        assert listed[0]["config"]["max_iterations"] == 12


class TestMCPServices:
    async def test_crud_test_and_tools(self, sqlite_client: httpx.AsyncClient, mcp_url: str) -> None:
        r = await sqlite_client.post("/api/v1/mcp-services", json={
            "name": "Test Tools", "transport_type": "http-streamable", "url": mcp_url,
            "auth_config": {"token": "s3cret"}})
        assert r.status_code == 201
        svc = data(r)
        assert svc["auth_config"] == {"token": "******"}
        assert "s3cret" not in r.text
        sid = svc["id"]
        test = data(await sqlite_client.post(f"/api/v1/mcp-services/{sid}/test"))
        assert test["success"] is True
        assert len(test["tools"]) == 3
        tools = {t["name"]: t for t in data(await sqlite_client.get(f"/api/v1/mcp-services/{sid}/tools"))}
        assert tools["delete-all"]["registered_name"] == "mcp_test_tools_delete_all"
        assert tools["delete-all"]["requires_approval"] is False
        r = await sqlite_client.put(f"/api/v1/mcp-services/{sid}/tool-approvals/delete-all",
                                    json={"require_approval": True})
        assert data(r)["require_approval"] is True
        approvals = data(await sqlite_client.get(f"/api/v1/mcp-services/{sid}/tool-approvals"))
        assert approvals == [{"tool_name": "delete-all", "require_approval": True}]
        upd = data(await sqlite_client.put(f"/api/v1/mcp-services/{sid}", json={
            "description": "d", "auth_config": {"token": "******"}}))
        assert upd["description"] == "d"
        listed = data(await sqlite_client.get("/api/v1/mcp-services"))
        assert [s["id"] for s in listed] == [sid]
        assert (await sqlite_client.delete(f"/api/v1/mcp-services/{sid}")).status_code == 200
        assert (await sqlite_client.get(f"/api/v1/mcp-services/{sid}")).status_code == 404

    async def test_credential_headers_are_masked_and_kept(self, sqlite_container: Services,
                                                          mcp_url: str) -> None:
        """An ``Authorization`` (or any key/token) header is a secret like ``auth_config``: never in an
        answer, and a masked value sent back keeps the stored one; other headers are shown and can change."""
        async with client_for(sqlite_container) as http:
            r = await http.post("/api/v1/mcp-services", json={
                "name": "Headers", "transport_type": "http-streamable", "url": mcp_url,
                "headers": {"Authorization": "Bearer s3cret", "X-Api-Key": "k3y", "X-Team": "docs"}})
            assert r.status_code == 201, r.text
            assert "s3cret" not in r.text
            assert "k3y" not in r.text
            svc = data(r)
            assert svc["headers"] == {"Authorization": "******", "X-Api-Key": "******", "X-Team": "docs"}
            listed = await http.get("/api/v1/mcp-services")
            assert "s3cret" not in listed.text
            upd = await http.put(f"/api/v1/mcp-services/{svc['id']}", json={
                "headers": {**svc["headers"], "X-Team": "support"}})
            assert upd.status_code == 200, upd.text
            c = sqlite_container
            stored = await c.mcp_services.get(c.default_tenant_id, svc["id"])
            assert stored.headers == {"Authorization": "Bearer s3cret", "X-Api-Key": "k3y",
                                      "X-Team": "support"}
            assert data(await http.post(f"/api/v1/mcp-services/{svc['id']}/test"))["success"] is True

    async def test_unreachable_service(self, sqlite_client: httpx.AsyncClient) -> None:
        from tests.adapters.mcp.server import free_port

        sid = data(await sqlite_client.post("/api/v1/mcp-services", json={
            "name": "down", "transport_type": "http-streamable", "url": f"http://127.0.0.1:{free_port()}/mcp",
            "advanced_config": {"timeout": 3}}))["id"]
        test = data(await sqlite_client.post(f"/api/v1/mcp-services/{sid}/test"))
        assert test["success"] is False
        assert test["message"]
        assert (await sqlite_client.get(f"/api/v1/mcp-services/{sid}/tools")).status_code == 503

    async def test_validation(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.post("/api/v1/mcp-services", json={"name": "x", "transport_type": "stdio",
                                                                  "stdio_config": {"command": "ls"}})
        assert r.status_code == 400
        assert "stdio" in r.json()["error"]["message"]
        r = await sqlite_client.post("/api/v1/mcp-services", json={"name": "x", "transport_type": "sse"})
        assert r.status_code == 400

    async def test_unknown_approval(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.post("/api/v1/agent/tool-approvals/nope", json={"approved": True})
        assert r.status_code == 404
        r = await sqlite_client.post("/api/v1/agent/tool-approvals/nope", json={})
        assert r.status_code == 400
