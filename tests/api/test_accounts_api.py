"""Accounts, members, keys and the audit log through the HTTP API (issue 14): the bad input the issue names
— wrong password (one message for unknown users), brute force (backoff), expired or forged tokens, a
viewer writing, a revoked or expired key, another tenant's ids — and the flows that work."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import httpx
import jwt
import pytest

from knora.domain.access import Role
from knora.root import Services
from knora.settings import Settings
from tests.conftest import TEST_API_KEY, TEST_OWNER_EMAIL, TEST_OWNER_PASSWORD, client_for, started

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings()) as services:
        yield services


@pytest.fixture
async def anon(c: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(c, **{"X-API-Key": ""}) as http:
        yield http


async def _login(anon: httpx.AsyncClient, email: str, password: str) -> httpx.Response:
    return await anon.post("/api/v1/auth/login", json={"email": email, "password": password})


def _bearer(body: dict[str, object]) -> dict[str, str]:
    return {"Authorization": f"Bearer {body['token']}"}


async def test_invite_register_accept_and_act_with_the_role(c: Services, anon: httpx.AsyncClient) -> None:
    tid = c.default_tenant_id
    owner = {"X-API-Key": TEST_API_KEY}
    r = await anon.post("/api/v1/auth/register", json={"username": "ann", "email": "ann@example.com",
                                                       "password": "ann-password"})
    assert r.status_code == 403  # registration is by invitation by default
    r = await anon.post(f"/api/v1/tenants/{tid}/invitations", json={"email": "ann@example.com",
                                                                    "role": "contributor"}, headers=owner)
    assert r.status_code == 201, r.text
    r = await anon.post("/api/v1/auth/register", json={"username": "ann", "email": "Ann@Example.com",
                                                       "password": "ann-password"})
    assert r.status_code == 201, r.text
    login = (await _login(anon, "ann", "ann-password")).json()
    assert login["memberships"] == []  # invited, not yet a member
    me = await anon.get("/api/v1/auth/me", headers=_bearer(login))
    assert me.json()["data"]["tenant_required"] is True
    assert (await anon.get("/api/v1/knowledge-bases", headers=_bearer(login))).status_code == 403
    mine = (await anon.get("/api/v1/me/invitations", headers=_bearer(login))).json()["data"]["invitations"]
    assert [i["role"] for i in mine] == ["contributor"]
    r = await anon.post(f"/api/v1/me/invitations/{mine[0]['id']}/accept", headers=_bearer(login))
    assert r.status_code == 200, r.text
    token = {**_bearer(login), "X-Tenant-ID": str(tid)}
    r = await anon.post("/api/v1/knowledge-bases", json={"name": "ann's"}, headers=token)
    assert r.status_code == 201
    r = await anon.post("/api/v1/models", json={"name": "m", "type": "chat"}, headers=token)
    assert r.status_code == 403
    assert "admin" in r.json()["error"]["message"]
    members = (await anon.get(f"/api/v1/tenants/{tid}/members", headers=token)).json()["data"]
    assert {m["email"]: m["role"] for m in members["members"]} == {TEST_OWNER_EMAIL: "owner",
                                                                    "ann@example.com": "contributor"}


async def test_my_invitations_leave_out_teams_i_was_added_to(c: Services, anon: httpx.AsyncClient) -> None:
    """Invited, then added by an admin directly: nothing is left to accept, so nothing is listed."""
    tid = c.default_tenant_id
    owner = {"X-API-Key": TEST_API_KEY}
    r = await anon.post(f"/api/v1/tenants/{tid}/invitations", json={"email": "cy@example.com"}, headers=owner)
    assert r.status_code == 201, r.text
    r = await anon.post("/api/v1/auth/register", json={"username": "cyd", "email": "cy@example.com",
                                                       "password": "cy-password"})
    assert r.status_code == 201, r.text
    cy = _bearer((await _login(anon, "cyd", "cy-password")).json())
    count = await anon.get("/api/v1/me/invitations/pending-count", headers=cy)
    assert count.json()["data"]["pending_count"] == 1
    r = await anon.post(f"/api/v1/tenants/{tid}/members", json={"email": "cy@example.com"}, headers=owner)
    assert r.status_code == 201, r.text
    assert (await anon.get("/api/v1/me/invitations", headers=cy)).json()["data"]["invitations"] == []
    count = await anon.get("/api/v1/me/invitations/pending-count", headers=cy)
    assert count.json()["data"]["pending_count"] == 0


async def test_wrong_and_unknown_logins_look_the_same_and_back_off(c: Services, anon: httpx.AsyncClient
                                                                   ) -> None:
    wrong = await _login(anon, TEST_OWNER_EMAIL, "not-the-password")
    unknown = await _login(anon, "nobody@example.com", "not-the-password")
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json()["message"] == unknown.json()["message"]
    for _ in range(4):  # five failures in all for this account: then one a minute
        assert (await _login(anon, TEST_OWNER_EMAIL, "not-the-password")).status_code == 401
    blocked = await _login(anon, TEST_OWNER_EMAIL, TEST_OWNER_PASSWORD)  # even the right password waits
    assert blocked.status_code == 429
    assert int(blocked.headers["Retry-After"]) >= 1
    assert "failed logins" in blocked.json()["error"]["message"]


async def test_refresh_rotates_logout_ends_and_forged_tokens_fail(c: Services, anon: httpx.AsyncClient
                                                                  ) -> None:
    login = (await _login(anon, TEST_OWNER_EMAIL, TEST_OWNER_PASSWORD)).json()
    r = await anon.post("/api/v1/auth/refresh", json={"refreshToken": login["refresh_token"]})
    assert r.status_code == 200, r.text
    fresh = r.json()
    again = await anon.post("/api/v1/auth/refresh", json={"refreshToken": login["refresh_token"]})
    assert again.status_code == 401  # a refresh token works once
    headers = {"Authorization": f"Bearer {fresh['access_token']}"}
    assert (await anon.get("/api/v1/knowledge-bases", headers=headers)).status_code == 200
    claims = jwt.decode(fresh["access_token"], options={"verify_signature": False})
    forged = jwt.encode({**claims, "exp": int(time.time()) + 3600}, b"not-the-key" * 4, algorithm="HS256")
    expired = jwt.encode({**claims, "exp": int(time.time()) - 10}, c.secrets.derive("access-token-v1"),
                         algorithm="HS256")
    for bad in (forged, expired):
        r = await anon.get("/api/v1/knowledge-bases", headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401
        assert r.json()["error"]["message"] == "Unauthorized: invalid or expired token"
    assert (await anon.post("/api/v1/auth/logout", headers=headers)).status_code == 200
    assert (await anon.get("/api/v1/knowledge-bases", headers=headers)).status_code == 401
    r = await anon.post("/api/v1/auth/refresh", json={"refreshToken": fresh["refresh_token"]})
    assert r.status_code == 401  # the session is over, its refresh token too


async def test_a_password_change_ends_the_other_sessions(c: Services, anon: httpx.AsyncClient) -> None:
    first = (await _login(anon, TEST_OWNER_EMAIL, TEST_OWNER_PASSWORD)).json()
    second = (await _login(anon, TEST_OWNER_EMAIL, TEST_OWNER_PASSWORD)).json()
    r = await anon.post("/api/v1/auth/change-password", headers=_bearer(second),
                        json={"old_password": "wrong-one", "new_password": "a-new-password"})
    assert r.status_code == 400
    r = await anon.post("/api/v1/auth/change-password", headers=_bearer(second),
                        json={"old_password": TEST_OWNER_PASSWORD, "new_password": "a-new-password"})
    assert r.status_code == 200, r.text
    assert (await anon.get("/api/v1/knowledge-bases", headers=_bearer(first))).status_code == 401
    assert (await anon.get("/api/v1/knowledge-bases", headers=_bearer(second))).status_code == 200
    assert (await _login(anon, TEST_OWNER_EMAIL, "a-new-password")).status_code == 200


async def test_keys_are_shown_once_capped_expire_and_revoke(c: Services, anon: httpx.AsyncClient) -> None:
    tid = c.default_tenant_id
    owner = {"X-API-Key": TEST_API_KEY}
    r = await anon.post(f"/api/v1/tenants/{tid}/api-keys", headers=owner,
                        json={"name": "ro", "read_only": True})
    assert r.status_code == 201, r.text
    created = r.json()["data"]
    assert created["role"] == "viewer"
    assert created["token"].startswith(created["api_key"].rstrip("…"))
    listed = (await anon.get(f"/api/v1/tenants/{tid}/api-keys", headers=owner)).json()["data"]
    assert all("token" not in k for k in listed)
    assert created["token"] not in str(listed)
    ro = {"X-API-Key": created["token"]}
    assert (await anon.get("/api/v1/knowledge-bases", headers=ro)).status_code == 200
    r = await anon.post("/api/v1/knowledge-bases", json={"name": "x"}, headers=ro)
    assert r.status_code == 403
    r = await anon.post(f"/api/v1/tenants/{tid}/api-keys", headers=ro, json={"name": "up"})
    assert r.status_code == 403  # keys are an admin's; a viewer key makes none
    admin_key, admin_plain = await c.tenants.create_key(tid, "admin", Role.ADMIN)
    r = await anon.post(f"/api/v1/tenants/{tid}/api-keys", headers={"X-API-Key": admin_plain},
                        json={"name": "owner?", "role": "owner"})
    assert r.status_code == 400  # no key is an owner's
    _soon, soon_plain = await c.tenants.create_key(tid, "soon", Role.VIEWER,
                                                   expires_at=datetime.now(UTC) + timedelta(seconds=1))
    assert (await anon.get("/api/v1/knowledge-bases", headers={"X-API-Key": soon_plain})).status_code == 200
    expired, expired_plain = await c.tenants.create_key(tid, "gone", Role.VIEWER,
                                                        expires_at=datetime.now(UTC) + timedelta(seconds=1))
    await c.tenants._repo.touch_keys([expired.id], datetime.now(UTC))  # noqa: SLF001 - unrelated write
    async with c.sessions.begin() as s:  # the expiry passes (without waiting for it)
        from knora.adapters.db.tables import ApiKeyRow
        row = await s.get(ApiKeyRow, expired.id)
        assert row is not None
        row.expires_at = datetime.now(UTC) - timedelta(seconds=5)
    c.tenants._cache.clear()  # noqa: SLF001 - as after KEY_RECHECK_SECONDS
    r = await anon.get("/api/v1/knowledge-bases", headers={"X-API-Key": expired_plain})
    assert r.status_code == 401
    r = await anon.delete(f"/api/v1/tenants/{tid}/api-keys/{created['id']}", headers=owner)
    assert r.status_code == 200
    assert (await anon.get("/api/v1/knowledge-bases", headers=ro)).status_code == 401  # at once, here
    log = (await anon.get(f"/api/v1/tenants/{tid}/audit-log", headers=owner)).json()["data"]["items"]
    actions = [(e["action"], e["actor"]) for e in log]
    assert ("DELETE /api/v1/tenants/{tenant_id}/api-keys/{key_id}", "key:" + log[0]["actor"][4:]) in actions
    assert any(a == "POST /api/v1/tenants/{tenant_id}/api-keys" for a, _ in actions)
    assert all(e["status"] < 400 for e in log)  # refused requests changed nothing and are not logged
    assert admin_key.role is Role.ADMIN


async def test_members_keep_an_owner_and_nobody_grants_above_themselves(c: Services, anon: httpx.AsyncClient
                                                                        ) -> None:
    tid = c.default_tenant_id
    owner = {"X-API-Key": TEST_API_KEY}
    user = await c.accounts.register("bob", "bob@example.com", "bob-password")
    r = await anon.post(f"/api/v1/tenants/{tid}/members", headers=owner, json={"email": "bob@example.com",
                                                                               "role": "admin"})
    assert r.status_code == 201, r.text
    bob = (await _login(anon, "bob", "bob-password")).json()
    bob_h = {**_bearer(bob), "X-Tenant-ID": str(tid)}
    members = (await anon.get(f"/api/v1/tenants/{tid}/members", headers=owner)).json()["data"]["members"]
    owner_id = next(m["user_id"] for m in members if m["role"] == "owner")
    r = await anon.put(f"/api/v1/tenants/{tid}/members/{user.id}", headers=bob_h, json={"role": "owner"})
    assert r.status_code == 403  # an admin cannot make an owner (themselves included)
    r = await anon.delete(f"/api/v1/tenants/{tid}/members/{owner_id}", headers=bob_h)
    assert r.status_code == 403  # nor touch an owner
    r = await anon.put(f"/api/v1/tenants/{tid}/members/{owner_id}", headers=owner, json={"role": "viewer"})
    assert r.status_code == 409  # the last owner stays
    r = await anon.delete(f"/api/v1/tenants/{tid}", headers=bob_h)
    assert r.status_code == 403  # only an owner deletes a tenant
    r = await anon.put(f"/api/v1/tenants/{tid}/members/{user.id}", headers=owner, json={"role": "viewer"})
    assert r.status_code == 200
    c.accounts.forget_member(tid)
    r = await anon.post("/api/v1/knowledge-bases", json={"name": "x"}, headers=bob_h)
    assert r.status_code == 403  # a viewer now: demoted at once
    assert (await anon.get("/api/v1/knowledge-bases", headers=bob_h)).status_code == 200


async def test_a_user_makes_and_deletes_a_tenant_of_their_own(c: Services, anon: httpx.AsyncClient) -> None:
    await c.accounts.register("cat", "cat@example.com", "cat-password")
    cat = (await _login(anon, "cat", "cat-password")).json()
    r = await anon.post("/api/v1/tenants", headers=_bearer(cat), json={"name": "Cat's team"})
    assert r.status_code == 201, r.text
    new = r.json()["data"]["id"]
    h = {**_bearer(cat), "X-Tenant-ID": str(new)}
    kb = (await anon.post("/api/v1/knowledge-bases", json={"name": "k"}, headers=h)).json()["data"]
    mine = (await anon.get("/api/v1/tenants", headers=_bearer(cat))).json()["data"]["items"]
    assert [(t["id"], t["role"]) for t in mine] == [(new, "owner")]
    other = {**_bearer(cat), "X-Tenant-ID": str(c.default_tenant_id)}
    assert (await anon.get("/api/v1/knowledge-bases", headers=other)).status_code == 403  # not a member
    assert (await anon.delete(f"/api/v1/tenants/{new}", headers=h)).status_code == 200
    owner = {"X-API-Key": TEST_API_KEY}
    assert (await anon.get(f"/api/v1/knowledge-bases/{kb['id']}", headers=owner)).status_code == 404
    assert (await anon.get("/api/v1/tenants", headers=_bearer(cat))).json()["data"]["items"] == []
