"""Accounts in the UI (issue 14): signing in with a password where auto-setup is refused (a browser that is
not on the server's machine: the tests refuse it as the server would), wrong passwords and back-off,
refreshing an expired access token, signing out; the tenant switcher; the team page (members and
invitations) and the API keys page, each with what a lower role sees and the server's refusals."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.account_helpers import (
    default_tenant,
    expire_access_and_reload,
    new_user,
    off_loopback,
    sign_in,
    user_api,
)
from tests.web.conftest import OWNER_EMAIL, OWNER_PASSWORD, KnoraServer, shot


def test_password_sign_in_refresh_and_sign_out(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    page = off_loopback(new_page())
    page.goto(f"{server.base_url}/settings")
    expect(page.locator("#login-name")).to_be_focused()
    page.fill("#login-name", OWNER_EMAIL)
    page.fill("#login-password", "not-the-password")
    page.press("#login-password", "Enter")
    expect(page.locator("#login-error")).to_have_text("Wrong e-mail, username or password.")
    shot(page, "login-password")
    page.fill("#login-password", OWNER_PASSWORD)
    page.press("#login-password", "Enter")
    expect(page.locator("h1")).to_have_text("Settings")  # back on the page that was asked for
    expect(page.locator("#whoami")).to_contain_text("owner")
    expect(page.locator("#whoami .badge")).to_have_text("Owner")
    session = json.loads(page.evaluate("localStorage.getItem('knora.session')"))
    assert session["access"].startswith("eyJ")
    assert session["refresh"]
    assert page.evaluate("localStorage.getItem('knora.apiKey')") is None

    # an access token the server no longer takes: refreshed once (POST /auth/refresh), the request retried
    assert expire_access_and_reload(page) == 200
    expect(page.locator("h1")).to_have_text("Settings")
    renewed = json.loads(page.evaluate("localStorage.getItem('knora.session')"))
    assert renewed["refresh"] != session["refresh"]  # rotated
    assert httpx.post(f"{server.base_url}/api/v1/auth/refresh",
                      json={"refresh_token": session["refresh"]}).status_code == 401

    page.locator("#logout").click()
    expect(page.locator("#login-name")).to_be_visible()
    assert page.evaluate("localStorage.getItem('knora.session')") is None
    # the session ended on the server: its tokens are refused
    assert httpx.get(f"{server.base_url}/api/v1/auth/me",
                     headers={"Authorization": f"Bearer {renewed['access']}"}).status_code == 401

    # too many failures: the server's wait is shown
    page.route("**/api/v1/auth/login", lambda route: route.fulfill(
        status=429, content_type="application/json", headers={"Retry-After": "42"},
        body='{"success":false,"error":{"code":1009,"message":"Too many failed logins: retry after 42 s"}}'))
    page.fill("#login-name", OWNER_EMAIL)
    page.fill("#login-password", OWNER_PASSWORD)
    page.press("#login-password", "Enter")
    expect(page.locator("#login-error")).to_have_text("Too many failed sign-ins: try again in 42 s.")


def test_tenant_switcher_sends_the_chosen_tenant(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    with user_api(server, OWNER_EMAIL, OWNER_PASSWORD) as owner:
        r = owner.post("/tenants", json={"name": "Second team"})
        assert r.status_code == 201, r.text
        second = r.json()["data"]["id"]
    page = off_loopback(new_page())
    sign_in(page, server, "/team")
    switcher = page.locator("#tenant")
    expect(switcher.locator("option")).to_have_count(2)
    # the page's first /members request (the signed-in tenant's) may still be in flight: wait for the one sent
    # for the chosen tenant (none is sent at all if the switcher does not send it: a timeout)
    with page.expect_request(lambda req: "/members" in req.url
                             and req.headers.get("x-tenant-id") == str(second)) as listed:
        switcher.select_option(str(second))
    assert listed.value.headers.get("x-tenant-id") == str(second)
    expect(page.locator("#members tr.member")).to_have_count(1)  # only its owner
    page.reload()
    expect(page.locator("#tenant")).to_have_value(str(second))


def test_members_add_change_remove_and_invitations(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    bob = new_user(server, "bob")
    page = off_loopback(new_page())
    sign_in(page, server, "/team")
    expect(page.locator("h1")).to_have_text("Team")
    add = page.locator("#add-member")
    add.locator("input[name=email]").fill(bob)
    add.locator("select[name=role]").select_option("contributor")
    add.get_by_role("button", name="Add member").click()
    row = page.locator("tr.member", has_text=bob)
    expect(row.locator("select[name=role]")).to_have_value("contributor")

    # the select shows the new role at once; the server has it once the page's change request is answered
    with page.expect_response(lambda r: "/members/" in r.url and r.request.method != "GET") as changed:
        row.locator("select[name=role]").select_option("admin")
    assert changed.value.ok
    expect(page.locator("tr.member", has_text=bob).locator("select[name=role]")).to_have_value("admin")
    members = server.api("GET", f"/tenants/{default_tenant(server)}/members")["members"]
    assert {m["email"]: m["role"] for m in members}[bob] == "admin"

    add.locator("input[name=email]").fill("nobody@example.org")
    add.get_by_role("button", name="Add member").click()
    expect(page.locator("#members-msg")).to_contain_text("invite them instead")  # the server's 404, shown

    invite = page.locator("#invite")
    invite.locator("input[name=email]").fill("carol@example.org")
    invite.get_by_role("button", name="Invite").click()
    pending = page.locator("tr.invitation", has_text="carol@example.org")
    expect(pending).to_contain_text("Pending")
    shot(page, "team")
    pending.get_by_role("button", name="Revoke").click()
    page.locator("dialog").get_by_role("button", name="Revoke").click()
    expect(page.locator("tr.invitation", has_text="carol@example.org")).to_contain_text("Revoked")

    # bob, an admin, sees the controls; demoted meanwhile, his next change is refused and says why
    bob_page = off_loopback(new_page())
    sign_in(bob_page, server, "/team", bob, "bob-password")
    expect(bob_page.locator("#add-member")).to_be_visible()
    owner_row = bob_page.locator("tr.member", has_text=OWNER_EMAIL)
    expect(owner_row.locator("select[name=role]")).to_be_disabled()  # an admin cannot change an owner
    row.locator("select[name=role]").select_option("viewer")
    expect(page.locator("tr.member", has_text=bob).locator("select[name=role]")).to_have_value("viewer")
    bob_page.locator("#add-member input[name=email]").fill("carol@example.org")
    bob_page.locator("#add-member").get_by_role("button", name="Add member").click()
    expect(bob_page.locator("#members-msg")).to_contain_text("needs the admin role")
    bob_page.reload()  # as a viewer: the list, no controls, no API keys page
    expect(bob_page.locator("tr.member", has_text=bob)).to_be_visible()
    expect(bob_page.locator("#add-member")).to_have_count(0)
    expect(bob_page.locator("#invite")).to_have_count(0)
    expect(bob_page.locator("tr.member select")).to_have_count(0)
    expect(bob_page.locator(".mainnav a#keys")).to_have_count(0)
    bob_page.goto(f"{server.base_url}/keys")
    expect(bob_page.get_by_role("alert")).to_have_text("Only admins and owners manage API keys.")

    page.locator("tr.member", has_text=bob).get_by_role("button", name="Remove").click()
    page.locator("dialog").get_by_role("button", name="Remove").click()
    expect(page.locator("tr.member", has_text=bob)).to_have_count(0)
    members = server.api("GET", f"/tenants/{default_tenant(server)}/members")["members"]
    assert bob not in {m["email"] for m in members}


def test_api_key_shown_once_and_revoked(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    page = off_loopback(new_page())
    sign_in(page, server, "/keys")
    expect(page.locator("h1")).to_have_text("API keys")
    form = page.locator("#create-key")
    form.locator("input[name=name]").fill("ci-reader")
    form.locator("select[name=role]").select_option("viewer")
    form.locator("input[name=expires_days]").fill("30")
    form.get_by_role("button", name="Create key").click()
    field = page.locator("#new-key")
    expect(field).to_be_visible()
    expect(page.locator("#new-key-box")).to_contain_text("shown only once")
    key = field.input_value()
    assert key.startswith("sk-")
    row = page.locator("tr.api-key", has_text="ci-reader")
    expect(row).to_contain_text(key[:7])
    expect(row).to_contain_text("Viewer")
    expect(row).not_to_contain_text("Never expires")
    assert key not in page.locator("#key-list").inner_text()  # the list shows the prefix only
    shot(page, "api-keys")

    r = httpx.get(f"{server.base_url}/api/v1/knowledge-bases", headers={"X-API-Key": key})
    assert r.status_code == 200
    assert httpx.post(f"{server.base_url}/api/v1/knowledge-bases", headers={"X-API-Key": key},
                      json={"name": "nope"}).status_code == 403  # a viewer key

    page.locator("#key-done").click()
    expect(page.locator("#new-key")).to_have_count(0)
    page.reload()
    expect(page.locator("tr.api-key", has_text="ci-reader")).to_be_visible()
    assert key not in page.content()  # never shown again

    page.locator("tr.api-key", has_text="ci-reader").get_by_role("button", name="Revoke").click()
    page.locator("dialog").get_by_role("button", name="Revoke").click()
    expect(page.locator("tr.api-key", has_text="ci-reader")).to_have_count(0)
    gone = httpx.get(f"{server.base_url}/api/v1/knowledge-bases", headers={"X-API-Key": key})
    assert gone.status_code == 401


@pytest.fixture(autouse=True)
def _no_leftover_members(server: KnoraServer) -> None:
    """Each test starts with the default tenant's members as the server made them: its owner."""
    tid = default_tenant(server)
    for m in server.api("GET", f"/tenants/{tid}/members")["members"]:
        if m["role"] != "owner":
            server.api("DELETE", f"/tenants/{tid}/members/{m['user_id']}")
