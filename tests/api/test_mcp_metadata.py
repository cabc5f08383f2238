"""``GET /mcp-services/:id/metadata`` and ``POST …/metadata/refresh`` through the real app, against a real MCP
server (the SDK's MCPServer over Streamable HTTP on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver import MCPServer

from knora.root import Services
from tests.adapters.mcp.server import free_port, running
from tests.conftest import client_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    server = MCPServer("weather-desk", version="2.3.1", description="Forecasts",
                       instructions="Call forecast with a city name.")

    @server.tool(description="Tomorrow's forecast for a city")
    def forecast(city: str) -> str:
        return f"sunny in {city}"

    with running(server.streamable_http_app()) as root:
        yield f"{root}/mcp"


async def _service(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    r = await http.post("/api/v1/mcp-services", json={"name": "Weather", "transport_type": "http-streamable",
                                                       "url": url})
    assert r.status_code == 201, r.text
    return dict(r.json()["data"])


async def test_never_refreshed_is_null_then_refresh_reads_the_server(sqlite_client: httpx.AsyncClient,
                                                                     server_url: str) -> None:
    sid = (await _service(sqlite_client, server_url))["id"]
    r = await sqlite_client.get(f"/api/v1/mcp-services/{sid}/metadata")
    assert r.status_code == 200, r.text
    assert r.json() == {"success": True, "data": None}

    r = await sqlite_client.post(f"/api/v1/mcp-services/{sid}/metadata/refresh")
    assert r.status_code == 200, r.text
    meta = r.json()["data"]
    assert (meta["service_id"], meta["server_name"], meta["server_version"]) == (sid, "weather-desk", "2.3.1")
    assert meta["server_description"] == "Forecasts"
    assert meta["instructions"] == "Call forecast with a city name."
    assert [t["name"] for t in meta["tools"]] == ["forecast"]
    assert meta["tools"][0]["description"] == "Tomorrow's forecast for a city"
    assert meta["stale"] is False
    assert meta["synced_at"]

    # the GET now answers the snapshot; renaming keeps it fresh, a new URL makes it stale
    assert (await sqlite_client.get(f"/api/v1/mcp-services/{sid}/metadata")).json()["data"] == meta
    await sqlite_client.put(f"/api/v1/mcp-services/{sid}", json={"description": "renamed"})
    assert (await sqlite_client.get(f"/api/v1/mcp-services/{sid}/metadata")).json()["data"]["stale"] is False
    await sqlite_client.put(f"/api/v1/mcp-services/{sid}", json={"url": server_url + "/"})
    assert (await sqlite_client.get(f"/api/v1/mcp-services/{sid}/metadata")).json()["data"]["stale"] is True


async def test_unreachable_unknown_and_other_tenant(sqlite_client: httpx.AsyncClient,
                                                    sqlite_container: Services, server_url: str) -> None:
    down = (await _service(sqlite_client, f"http://127.0.0.1:{free_port()}/mcp"))["id"]
    r = await sqlite_client.post(f"/api/v1/mcp-services/{down}/metadata/refresh")
    assert r.status_code == 503, r.text
    assert r.json()["success"] is False
    assert (await sqlite_client.get(f"/api/v1/mcp-services/{down}/metadata")).json()["data"] is None

    for sid in ("00000000-0000-4000-8000-000000000000", "not-an-id"):
        assert (await sqlite_client.get(f"/api/v1/mcp-services/{sid}/metadata")).status_code == 404
        assert (await sqlite_client.post(f"/api/v1/mcp-services/{sid}/metadata/refresh")).status_code == 404

    mine = (await _service(sqlite_client, server_url))["id"]
    assert (await sqlite_client.post(f"/api/v1/mcp-services/{mine}/metadata/refresh")).status_code == 200
    _, key = await sqlite_container.tenants.create("other")
    async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
        assert (await other.get(f"/api/v1/mcp-services/{mine}/metadata")).status_code == 404
        assert (await other.post(f"/api/v1/mcp-services/{mine}/metadata/refresh")).status_code == 404
