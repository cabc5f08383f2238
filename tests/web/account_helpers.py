"""Helpers of the account browser tests (tests/web/test_accounts.py, test_account_settings.py): a browser that
auto-setup refuses, signing in with a password, a user's API client, users made through an invitation."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.sync_api import expect

from tests.web.conftest import OWNER_EMAIL, OWNER_PASSWORD, KnoraServer

REFUSED = '{"success":false,"error":{"code":1002,"message":"auto-setup is for this machine only"}}'


def off_loopback(page: Any) -> Any:
    """The page as a browser elsewhere sees the server: auto-setup answers 403."""
    page.route("**/api/v1/auth/auto-setup", lambda route: route.fulfill(
        status=403, content_type="application/json", body=REFUSED))
    return page


def sign_in(page: Any, server: KnoraServer, path: str, login: str = OWNER_EMAIL,
            password: str = OWNER_PASSWORD) -> None:
    page.goto(f"{server.base_url}{path}")
    page.fill("#login-name", login)
    page.fill("#login-password", password)
    page.press("#login-password", "Enter")
    expect(page.locator("#logout")).to_be_visible()


def user_api(server: KnoraServer, login: str, password: str) -> httpx.Client:
    r = httpx.post(f"{server.base_url}/api/v1/auth/login", json={"email": login, "password": password})
    assert r.status_code == 200, r.text
    return httpx.Client(base_url=f"{server.base_url}/api/v1", timeout=30,
                        headers={"Authorization": f"Bearer {r.json()['token']}"})


def default_tenant(server: KnoraServer) -> int:
    return int(server.api("GET", "/auth/me")["tenant"]["id"])


def new_user(server: KnoraServer, name: str, role: str | None = None) -> str:
    """A registered user ``name`` (invited, as registration is by invitation), a member with ``role`` if
    given; returns the e-mail."""
    email = f"{name}@example.org"
    tid = default_tenant(server)
    server.api("POST", f"/tenants/{tid}/invitations", json={"email": email, "role": "viewer"})
    r = httpx.post(f"{server.base_url}/api/v1/auth/register",
                   json={"username": name, "email": email, "password": f"{name}-password"})
    assert r.status_code == 201, r.text
    if role is not None:
        server.api("POST", f"/tenants/{tid}/members", json={"email": email, "role": role})
    return email


def expire_access_and_reload(page: Any) -> int:
    """Makes the page's access token one the server refuses and reloads: the status of the one
    ``POST /auth/refresh`` the UI then makes."""
    page.evaluate("""() => { const s = JSON.parse(localStorage.getItem('knora.session'));
        s.access = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.expired';
        localStorage.setItem('knora.session', JSON.stringify(s)); }""")
    with page.expect_response("**/api/v1/auth/refresh") as refreshed:
        page.reload()
    status: int = refreshed.value.status
    return status
