"""Credentials are sealed in the database (model API keys, MCP headers/tokens/environment, web-search keys),
read back in clear by the services, and resealed with a new key by ``knora secrets rotate``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from knora.adapters.db.repos._sealed import reseal_all
from knora.adapters.db.repos.mcp_services import SqlMCPServiceRepo
from knora.adapters.db.repos.web_search_providers import SqlWebSearchProviderRepo
from knora.adapters.secrets.fernet import FernetBox, new_key
from knora.cli.main import main
from knora.domain.mcp import MCPService
from knora.domain.models import ModelConfig
from knora.domain.websearch import WebSearchProvider
from knora.ports.secrets import SecretError
from knora.settings import Settings
from tests.conftest import RECORDING, started

pytestmark = pytest.mark.integration

SECRETS = ("sk-model-key-0001", "Bearer mcp-token-0002", "env-secret-0003", "ws-key-0004")


async def _raw(c: Any) -> str:
    """Every credential column as the database holds it."""
    async with c.db.connect() as conn:
        parts = [str(r) for r in (await conn.execute(text("SELECT api_key FROM models"))).all()]
        parts += [str(r) for r in (await conn.execute(text(
            "SELECT headers, auth_config, env_vars FROM mcp_services"))).all()]
        parts += [str(r) for r in (await conn.execute(text(
            "SELECT parameters FROM web_search_providers"))).all()]
    return "\n".join(parts)


async def _store_credentials(c: Any) -> tuple[str, str, str]:
    t = c.default_tenant_id
    model = await c.repos.models.create(ModelConfig(tenant_id=t, name="gpt", type="KnowledgeQA",
                                                    api_key=SECRETS[0]))
    mcp = await SqlMCPServiceRepo(c.sessions, c.secrets).create(MCPService(
        tenant_id=t, name="tools", url="https://mcp.example/sse", headers={"Authorization": SECRETS[1]},
        auth_config={"token": "t"}, env_vars={"TOKEN": SECRETS[2]}))
    ws = await SqlWebSearchProviderRepo(c.sessions, c.secrets).create(WebSearchProvider(
        tenant_id=t, name="web", provider="bing", parameters={"api_key": SECRETS[3], "base_url": ""}))
    return model.id, mcp.id, ws.id


async def test_credentials_are_sealed_in_the_database_and_clear_to_the_services(
        make_settings: Any, db_url: str) -> None:
    async with started(make_settings(database_url=db_url), RECORDING) as c:
        model_id, mcp_id, ws_id = await _store_credentials(c)
        raw = await _raw(c)
        for secret in SECRETS:
            assert secret not in raw
        assert raw.count("enc:v1:") == 5  # api_key, headers, auth_config, env_vars, parameters
        t = c.default_tenant_id
        assert (await c.repos.models.get(t, model_id)).api_key == SECRETS[0]
        mcp = await SqlMCPServiceRepo(c.sessions, c.secrets).get(t, mcp_id)
        assert (mcp.headers, mcp.env_vars) == ({"Authorization": SECRETS[1]}, {"TOKEN": SECRETS[2]})
        ws = await SqlWebSearchProviderRepo(c.sessions, c.secrets).get(t, ws_id)
        assert ws.parameters["api_key"] == SECRETS[3]


async def test_rotation_reseals_everything_with_the_new_key(make_settings: Any, db_url: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = new_key(), new_key()
    async with started(make_settings(database_url=db_url, secret_key=old), RECORDING) as c:
        model_id, _, _ = await _store_credentials(c)
        async with c.db.begin() as conn:  # a value stored in clear before sealing existed
            await conn.execute(text("UPDATE web_search_providers SET parameters = :p"),
                               {"p": json.dumps({"api_key": "legacy-plain"})})
        before = await _raw(c)
        with pytest.raises(SecretError):
            await reseal_all(c.sessions, FernetBox([new]))  # the old values open with no key it has
        assert await _raw(c) == before
    settings = make_settings(database_url=db_url, secret_key=new, previous_secret_keys=[old])
    for name, value in {"KNORA_DATABASE_URL": db_url, "KNORA_DATA_DIR": str(settings.data_dir),
                        "KNORA_SECRET_KEY": new, "KNORA_PREVIOUS_SECRET_KEYS": json.dumps([old])}.items():
        monkeypatch.setenv(name, value)
    assert await _rotate_in_thread() == 0
    async with started(make_settings(database_url=db_url, secret_key=new), RECORDING) as c:  # old key gone
        assert (await c.repos.models.get(c.default_tenant_id, model_id)).api_key == SECRETS[0]
        raw = await _raw(c)
        assert "legacy-plain" not in raw
        providers = await SqlWebSearchProviderRepo(c.sessions, c.secrets).list(c.default_tenant_id)
        assert providers[0].parameters == {"api_key": "legacy-plain"}


async def _rotate_in_thread() -> int:
    """``knora secrets rotate`` as a user runs it (its own event loop, so in a thread here)."""
    import asyncio

    return await asyncio.to_thread(main, ["secrets", "rotate"])


def test_new_key_prints_a_usable_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["secrets", "new-key"]) == 0
    key = capsys.readouterr().out.strip()
    FernetBox([key])
    settings = Settings(secret_key=key)
    assert settings.secret_key is not None
    assert key not in repr(settings)  # a SecretStr: never printed with the settings
