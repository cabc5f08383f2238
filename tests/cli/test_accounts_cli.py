"""``knora user``, ``knora tenant`` and ``knora key`` in-process on a private data dir (through a running
server: tests/cli/test_server_mode.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from knora.cli._common import running_services
from knora.cli.main import main
from knora.domain.access import AuditEntry

pytestmark = pytest.mark.integration


def _json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _can_log_in(login: str, password: str) -> bool:
    async def attempt() -> bool:
        async with running_services() as c:
            try:
                await c.accounts.login(login, password, "test")
            except Exception:
                return False
            return True

    return asyncio.run(attempt())


def test_user_create_and_list(env: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNORA_OWNER_PASSWORD", raising=False)
    assert main(["user", "create", "--email", "ann@example.org", "--password", "ann-password",
                 "--role", "contributor", "--json"]) == 0
    out = capsys.readouterr()
    created = json.loads(out.out)
    assert (created["username"], created["role"], created["tenant"]) == ("ann", "contributor", "default")
    assert "password" not in created  # chosen, not generated: never printed
    # the first command on this data dir made the owner account: its generated password is said once
    assert "owner account made (shown once, keep it): owner@localhost / " in out.err

    # no --password and no terminal: one is generated and printed once
    assert main(["user", "create", "--email", "ben@example.org", "--username", "benny"]) == 0
    out = capsys.readouterr()
    assert "owner account made" not in out.err
    assert "Created user benny <ben@example.org>: viewer of default" in out.out
    password = out.out.split("Password (shown once, keep it): ", 1)[1].strip()
    assert _can_log_in("ben@example.org", password)
    assert _can_log_in("ann", "ann-password")

    assert main(["user", "create", "--email", "ann@example.org", "--password", "another-password"]) == 1
    assert "knora:" in capsys.readouterr().err
    assert main(["user", "create", "--email", "cyd@example.org", "--password", "short"]) == 1
    assert "at least 8 characters" in capsys.readouterr().err
    assert main(["user", "create", "--email", "cy@example.org", "--password", "cy-password"]) == 1
    assert "choose one with --username" in capsys.readouterr().err

    assert main(["user", "list", "--json"]) == 0
    users = {u["email"]: u for u in _json(capsys)}  # type: ignore[union-attr]
    assert set(users) == {"owner@localhost", "ann@example.org", "ben@example.org"}
    assert users["owner@localhost"]["tenants"][0]["role"] == "owner"
    assert users["ann@example.org"]["tenants"] == [{"tenant_id": created["tenant_id"], "tenant": "default",
                                                    "role": "contributor"}]
    assert main(["user", "list"]) == 0
    assert "default (viewer)" in capsys.readouterr().out
    entries = _audit()
    assert [e.action for e in entries] == ["knora user create"] * 2
    assert entries[0].actor.startswith("cli:")


def test_tenant_create_and_list(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["user", "create", "--email", "dee@example.org", "--password", "dee-password"]) == 0
    capsys.readouterr()
    assert main(["tenant", "create", "Research", "--owner", "dee@example.org", "--json"]) == 0
    research = _json(capsys)
    assert research["owner"] == "dee@example.org"  # type: ignore[index]
    assert main(["tenant", "create", "Ops"]) == 0  # owned by the owner account
    assert "owned by owner <owner@localhost>" in capsys.readouterr().out
    assert main(["tenant", "create", "Nope", "--owner", "nobody@example.org"]) == 1
    assert "no account 'nobody@example.org'" in capsys.readouterr().err

    assert main(["tenant", "list", "--json"]) == 0
    tenants = {t["name"]: t for t in _json(capsys)}  # type: ignore[union-attr]
    assert set(tenants) == {"default", "Research", "Ops"}
    assert tenants["default"]["default"] is True
    assert tenants["default"]["members"] == 2  # the owner and dee
    assert tenants["Research"]["members"] == 1

    # a user added to another tenant with --tenant
    assert main(["user", "create", "--email", "eve@example.org", "--password", "eve-password",
                 "--tenant", str(research["id"]), "--role", "admin", "--json"]) == 0  # type: ignore[index]
    assert _json(capsys)["tenant"] == "Research"  # type: ignore[index]
    assert main(["user", "create", "--email", "fay@example.org", "--password", "fay-password",
                 "--tenant", "999"]) == 1
    assert "no tenant with id 999" in capsys.readouterr().err


def test_key_create_list_revoke_in_process(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["key", "create", "--name", "ci", "--role", "contributor", "--expires-days", "7",
                 "--json"]) == 0
    out = capsys.readouterr()
    assert "working in-process" in out.err
    made = json.loads(out.out)
    key = made["key"]
    assert key.startswith("sk-")
    assert (made["role"], made["prefix"]) == ("contributor", key[:7])
    assert made["expires_at"]

    assert main(["key", "create", "--name", "reader"]) == 0
    out = capsys.readouterr().out
    assert "Created API key reader (viewer)" in out
    assert out.count("sk-") == 1  # printed once

    assert main(["key", "list", "--json"]) == 0
    listed = {k["name"]: k for k in _json(capsys)}  # type: ignore[union-attr]
    assert {"ci", "reader"} <= set(listed)
    assert listed["ci"]["prefix"] == key[:7]
    assert key not in json.dumps(listed)
    assert main(["key", "list"]) == 0
    assert key not in capsys.readouterr().out

    assert main(["key", "revoke", "ci"]) == 0
    assert "Revoked API key ci" in capsys.readouterr().out
    assert main(["key", "revoke", "ci"]) == 1
    assert "no key 'ci'" in capsys.readouterr().err
    assert main(["key", "create", "--name", "x", "--expires-days", "0"]) == 1
    assert main(["key", "list", "--json"]) == 0
    assert "ci" not in {k["name"] for k in _json(capsys)}  # type: ignore[union-attr]
    assert [e.action for e in _audit()] == ["knora key revoke", "knora key create", "knora key create"]


def _audit() -> list[AuditEntry]:
    async def read() -> list[AuditEntry]:
        async with running_services() as c:
            return await c.audit.entries(c.default_tenant_id)

    return asyncio.run(read())
