"""Issue 16: WeKnora's storage views name the blob store ``KNORA_BLOB_STORE`` chose (s3 or postgres), not
"local" whatever it is; the field names are WeKnora's (``storage-engine-status``: name, allowed, available,
description; the ``s3`` section of ``storage-engine-config``: endpoint, region, bucket_name, path_prefix)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.conftest import RECORDING, client_for, s3_settings, started

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

API = "/api/v1"


@pytest.fixture(params=["s3", "postgres"])
def store(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    if request.param == "s3":
        return "s3", {**s3_settings(request.getfixturevalue("s3_endpoint")), "s3_prefix": "kb/"}
    return "postgres", {"blob_store": "postgres"}


@pytest.fixture
async def http(make_settings: Callable[..., Settings], pg_url: str,
               store: tuple[str, dict[str, Any]]) -> AsyncIterator[httpx.AsyncClient]:
    async with started(make_settings(database_url=pg_url, **store[1]), RECORDING) as c, client_for(c) as h:
        yield h


async def _data(http: httpx.AsyncClient, path: str) -> Any:
    r = await http.get(f"{API}{path}")
    assert r.status_code == 200, r.text
    return r.json()["data"]


async def test_every_storage_view_names_the_configured_store(http: httpx.AsyncClient,
                                                            store: tuple[str, dict[str, Any]]) -> None:
    name, fields = store
    backend_id = f"builtin-{name}"
    r = await http.get(f"{API}/storage-backends")
    assert r.json()["default_storage_backend_id"] == backend_id
    [backend] = r.json()["data"]
    assert (backend["id"], backend["provider"]) == (backend_id, name)
    assert await _data(http, f"/storage-backends/{backend_id}") == backend
    assert (await http.get(f"{API}/storage-backends/builtin-local")).status_code == 404
    assert await _data(http, "/storage-backends/types") == [name]

    status = await _data(http, "/system/storage-engine-status")
    assert [(e["name"], e["allowed"], e["available"]) for e in status["engines"]] == [(name, True, True)]
    assert status["allowed_providers"] == [name]

    config = await _data(http, "/tenants/kv/storage-engine-config")
    assert config["default_provider"] == name
    assert "local" not in config
    if name == "s3":
        assert config["s3"] == {"endpoint": fields["s3_endpoint_url"], "region": "us-east-1",
                                "bucket_name": fields["s3_bucket"], "path_prefix": "kb/"}
        assert backend["config"] == config["s3"]
        assert "test" not in str(config)  # no credentials in the views
    r = await http.put(f"{API}/tenants/kv/storage-engine-config", json=config)
    assert r.status_code == 200, r.text
    for refused in ({"default_provider": "local"}, {name: {"bucket_name": "elsewhere"}}):
        r = await http.put(f"{API}/tenants/kv/storage-engine-config", json=refused)
        assert r.status_code == 400, (refused, r.text)

    info = await _data(http, "/system/info")
    assert info["blob_store"] == name
    assert info["minio_enabled"] is (name == "s3")  # a self-hosted S3-compatible endpoint, WeKnora's "minio"


async def test_knowledge_bases_are_bound_to_it_and_its_check_writes_through_it(
        http: httpx.AsyncClient, store: tuple[str, dict[str, Any]]) -> None:
    name = store[0]
    r = await http.post(f"{API}/knowledge-bases", json={"name": "Docs"})
    assert r.status_code == 201, r.text
    kb = r.json()["data"]
    assert kb["storage_provider_config"] == {"provider": name}
    assert kb["storage_backend_id"] == f"builtin-{name}"
    r = await http.post(f"{API}/knowledge-bases", json={"name": "Local", "storage_provider_config":
                                                         {"provider": "local"}})
    assert r.status_code == 400, r.text  # it would not be stored locally

    r = await http.post(f"{API}/system/storage-engine-check", json={"provider": name})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ok"] is True, r.text
    r = await http.post(f"{API}/storage-backends/builtin-{name}/test")
    assert r.json()["data"]["ok"] is True, r.text
