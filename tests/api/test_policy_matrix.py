"""The route × role × tenant matrix (issue 14), generated from the OpenAPI document: a route added tomorrow is
in it the day it is added.

Every route is called with no credentials, with a key of another tenant, with a key of each role and with a
signed-in user's token of two roles. What must hold:

- without credentials, 401 everywhere but the public routes (logging in);
- each role is refused with the policy's 403 exactly where ``knora.api.policy`` says the route needs more, and
  never refused (401 / policy 403) where it does not;
- independently of the policy table, the issue's roles: a viewer's accepted writes are all chat-class, a
  contributor's accepted writes never touch what admins manage (0 role escalations);
- another tenant's key, given this tenant's real ids, never gets a 2xx for a path naming them, and this
  tenant's data is the same afterwards (0 cross-tenant reads or writes).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.api.policy import requirement
from knora.domain.access import Role
from knora.root import Services
from knora.settings import Settings
from tests.conftest import TEST_API_KEY, client_for, started

POLICY_REFUSAL = "Forbidden: this needs the "
NOWHERE = "00000000-0000-4000-8000-000000000000"

# The words, written out here independently of the policy table.
_CHAT_WRITES = re.compile(r"^/api/v1/(knowledge-chat/|agent-chat/|sessions|messages/|agent/tool-approvals/"
                          r"|knowledge-search$|knowledge-bases/\{kb_id\}/(hybrid-search|faq/search)$"
                          r"|auth/|me/|tenants$|tenants/\{tenant_id\}/leave$)|^/v1/chat/completions$")
_ADMIN_THINGS = re.compile(r"^/api/v1/(models|agents|mcp-services|web-search-providers|storage-backends"
                           r"|initialization|tenants/kv/|tenants/\{tenant_id\}($|/(members|invitations|api-keys"
                           r"|audit-log))|knowledge-bases/\{kb_id\}/shares)")


def _routes(app_schema: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (method, path) of the document; leaving the tenant and logging out last (they end what the
    tokens stand for)."""
    found = sorted((method.upper(), path) for path, ops in app_schema["paths"].items() for method in ops)
    return sorted(found, key=lambda r: 2 if r[1].endswith("/auth/logout") else r[1].endswith("/leave"))


async def _ids(http: httpx.AsyncClient, c: Services) -> dict[str, str]:
    """Real ids of this tenant's objects, for the path parameters (a dummy id where there is none)."""
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": "matrix"})).json()["data"]
    doc = (await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                           json={"title": "doc", "content": "Some text about the matrix."})).json()["data"]
    session = (await http.post("/api/v1/sessions", json={})).json()["data"]
    tag = (await http.post(f"/api/v1/knowledge-bases/{kb['id']}/tags", json={"name": "t"})).json()["data"]
    agent = (await http.post("/api/v1/agents", json={"name": "matrix agent"})).json().get("data") or {}
    key, _plain = await c.tenants.create_key(c.default_tenant_id, "spare", Role.VIEWER)
    members = (await http.get(f"/api/v1/tenants/{c.default_tenant_id}/members")).json()["data"]["members"]
    return {"kb_id": kb["id"], "knowledge_id": doc["id"], "session_id": session["id"], "tag_id": tag["id"],
            "agent_id": agent.get("id", NOWHERE), "tenant_id": str(c.default_tenant_id), "key_id": key.id,
            "user_id": members[0]["user_id"]}


def _url(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{([a-z_]+)\}", lambda m: ids.get(m.group(1), NOWHERE), path)


async def _call(http: httpx.AsyncClient, method: str, url: str, headers: dict[str, str]) -> httpx.Response:
    body = {} if method in ("POST", "PUT", "PATCH") else None
    return await http.request(method, url, json=body, headers=headers)


def _refused_by_policy(r: httpx.Response) -> bool:
    if r.status_code != 403:
        return False
    error = r.json().get("error", {})
    return str(error.get("message", "")).startswith(POLICY_REFUSAL)


async def _snapshot(http: httpx.AsyncClient, ids: dict[str, str]) -> list[Any]:
    """What the cross-tenant pass must not change (volatile fields left out)."""
    urls = ["/api/v1/knowledge-bases", f"/api/v1/knowledge-bases/{ids['kb_id']}/knowledge",
            f"/api/v1/knowledge-bases/{ids['kb_id']}/tags", "/api/v1/sessions", "/api/v1/agents",
            "/api/v1/models", f"/api/v1/tenants/{ids['tenant_id']}/members", "/api/v1/mcp-services",
            f"/api/v1/chunks/{ids['knowledge_id']}"]
    out: list[Any] = []
    for url in urls:
        r = await http.get(url)
        out.append((url, r.status_code, _stable(r.json())))
    keys = (await http.get(f"/api/v1/tenants/{ids['tenant_id']}/api-keys")).json()["data"]
    out.append(sorted((k["id"], k["name"], k["role"]) for k in keys))
    return out


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items()
                if k not in ("updated_at", "last_used_at", "storage_used", "process_time", "latency")}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.mark.timeout(600)
async def test_every_route_against_every_role_and_another_tenant(make_settings: Callable[..., Settings]
                                                                 ) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        tenant_id = c.default_tenant_id
        ids = await _ids(http, c)
        principals: dict[str, dict[str, str]] = {"owner key": {"X-API-Key": TEST_API_KEY}}
        roles: dict[str, Role] = {"owner key": Role.OWNER}
        for role in (Role.VIEWER, Role.CONTRIBUTOR, Role.ADMIN):
            _key, plain = await c.tenants.create_key(tenant_id, f"{role.value} key", role)
            principals[f"{role.value} key"] = {"X-API-Key": plain}
            roles[f"{role.value} key"] = role
        for role in (Role.VIEWER, Role.ADMIN):
            name = f"{role.value}-user"
            user = await c.accounts.register(name, f"{name}@example.com", "a-long-password")
            await c.accounts._repo.add_member(tenant_id, user.id, role, None)  # noqa: SLF001 - set-up only
            login = await c.accounts.login(name, "a-long-password", "127.0.0.1")
            principals[f"{role.value} token"] = {"Authorization": f"Bearer {login.tokens.access_token}",
                                                 "X-API-Key": ""}
            roles[f"{role.value} token"] = role
        other, other_key = await c.tenants.create("foreign")
        foreign_admin, foreign_plain = await c.tenants.create_key(other.id, "foreign admin", Role.ADMIN)

        routes = _routes(http._transport.app.openapi())  # type: ignore[attr-defined]  # noqa: SLF001
        assert len(routes) > 150  # the whole API, not a stub of it
        before = await _snapshot(http, ids)
        problems: list[str] = []
        calls = 0

        # 1. another tenant's key, this tenant's ids: nothing read, nothing changed
        for method, path in routes:
            if "{" not in path or requirement(method, path).public:
                continue
            for foreign in ({"X-API-Key": foreign_plain}, {"X-API-Key": other_key}):
                r = await _call(http, method, _url(path, ids), foreign)
                calls += 1
                if 200 <= r.status_code < 300 and not _global(path):
                    problems.append(f"cross-tenant {r.status_code}: {method} {path}")
        assert await _snapshot(http, ids) == before, "another tenant's requests changed this tenant's data"

        # 2. no credentials, then every principal of this tenant (dummy ids: nothing real is deleted)
        dummy = {"tenant_id": str(tenant_id), "key_id": NOWHERE, "user_id": NOWHERE}
        for method, path in routes:
            rule = requirement(method, path)
            url = _url(path, dummy)
            r = await _call(http, method, url, {"X-API-Key": ""})
            calls += 1
            if rule.public:  # a failed login is a 401 too, but never for want of credentials
                if "missing authentication" in r.text:
                    problems.append(f"public route wants credentials: {method} {path}")
                continue
            if r.status_code != 401:
                problems.append(f"no credentials → {r.status_code}: {method} {path}")
            for name, headers in principals.items():
                role = roles[name]
                r = await _call(http, method, url, headers)
                calls += 1
                needed = rule.role
                refused = r.status_code == 401 or _refused_by_policy(r)
                should_refuse = needed is not None and not rule.tenantless and not role.covers(needed)
                if refused != should_refuse:
                    problems.append(f"{name} → {r.status_code} ({r.text[:80]}): {method} {path}")
                accepted_write = not refused and method not in ("GET", "HEAD")
                if accepted_write and role is Role.VIEWER and not _CHAT_WRITES.search(path):
                    problems.append(f"escalation: a viewer may {method} {path}")
                if accepted_write and role is Role.CONTRIBUTOR and _ADMIN_THINGS.search(path):
                    problems.append(f"escalation: a contributor may {method} {path}")
        print(f"matrix: {len(routes)} routes, {len(principals) + 2} principals, {calls} requests, "
              f"{len(problems)} problems")
        assert not problems, "\n".join(problems)
        assert foreign_admin.tenant_id == other.id


def _global(path: str) -> bool:
    """Paths whose ids are not a tenant's objects: progress of the caller's own tasks by id, and the
    channels of an agent (a feature Knora has not: the empty list for any id)."""
    return bool(re.search(r"/progress/\{task_id\}$|/download/progress/|/tool-approvals/\{pending_id\}$"
                          r"|/agents/\{agent_id\}/(im|embed)-channels$", path))  # these: [] for any id


async def test_a_path_naming_another_tenant_is_404(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        other, _key = await c.tenants.create("elsewhere")
        for method, path in (("GET", "/members"), ("GET", "/api-keys"), ("POST", "/api-keys"), ("GET", ""),
                             ("DELETE", ""), ("GET", "/audit-log")):
            r = await http.request(method, f"/api/v1/tenants/{other.id}{path}",
                                   json={"name": "x"} if method == "POST" else None)
            assert r.status_code == 404, (method, path, r.text)
        r = await http.get(f"/api/v1/tenants/{uuid.uuid4().int % 10**6 + 1000}/members")
        assert r.status_code == 404
