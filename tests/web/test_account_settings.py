"""A signed-in user's own account in the UI (issue 14): changing the password (the server's refusals shown as
it words them, this session kept, the others ended), the invitations addressed to the user (accepted: the
team appears in the tenant switcher; declined: gone), and the Team page of a team with more than 100 members,
in pages. Auto-setup is refused as off the server's machine, so every page is a password sign-in."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.fakes.model_server import FakeModelServer
from tests.web.account_helpers import expire_access_and_reload, new_user, off_loopback, sign_in, user_api
from tests.web.conftest import OWNER_EMAIL, OWNER_PASSWORD, KnoraServer, launch_server, shot, stop_server

BIG_TEAM = 130  # members besides the owner: two pages of 100


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory,
                  fake_model: FakeModelServer) -> Iterator[KnoraServer]:
    """This module's server hashes passwords cheaply and has no request budget: it registers a big team."""
    srv = launch_server(tmp_path_factory.mktemp("knora") / "data", fake_model,
                        KNORA_PASSWORD_HASH_MEMORY_KIB="8", KNORA_PASSWORD_HASH_ITERATIONS="1",
                        KNORA_RATE_LIMIT_PER_MINUTE="0")
    yield srv
    stop_server(srv)


def new_team(owner: httpx.Client, name: str) -> tuple[int, dict[str, str]]:
    """A tenant of the owner's; returns its id and the headers that act in it."""
    r = owner.post("/tenants", json={"name": name})
    assert r.status_code == 201, r.text
    tid = int(r.json()["data"]["id"])
    return tid, {"X-Tenant-ID": str(tid)}


def invite(owner: httpx.Client, tid: int, email: str, role: str) -> None:
    r = owner.post(f"/tenants/{tid}/invitations", json={"email": email, "role": role},
                   headers={"X-Tenant-ID": str(tid)})
    assert r.status_code == 201, r.text


def test_change_password_says_what_is_wrong_and_keeps_this_session(
        server: KnoraServer, new_page: Callable[..., Any]) -> None:
    dana = new_user(server, "dana", "viewer")
    other = user_api(server, dana, "dana-password")  # another login session of dana's, elsewhere
    page = off_loopback(new_page())
    sign_in(page, server, "/settings", dana, "dana-password")
    form = page.locator("#change-password")
    error = page.locator("#password-error")

    def change(current: str, new: str, again: str | None = None) -> None:
        form.locator("#current-password").fill(current)
        form.locator("#new-password").fill(new)
        form.locator("#confirm-password").fill(new if again is None else again)
        form.get_by_role("button", name="Change password").click()

    change("not-my-password", "a-better-password")
    expect(error).to_have_text("The current password is wrong")  # the server's 400, as it says it
    expect(page.locator("#login-name")).to_have_count(0)  # a wrong password is no reason to sign out
    change("dana-password", "short")
    expect(error).to_have_text("password: at least 8 characters")
    with page.expect_request("**/auth/change-password") as sent:
        change("dana-password", "a-better-password", "a-better-pasword")
        expect(error).to_have_text("The new passwords do not match.")  # checked here: nothing is sent
        change("dana-password", "a-better-password")
    assert json.loads(sent.value.post_data or "{}") == {"old_password": "dana-password",
                                                        "new_password": "a-better-password"}
    expect(page.locator("#password-done")).to_contain_text("Password changed")
    expect(error).to_have_text("")
    expect(form.locator("#current-password")).to_have_value("")
    shot(page, "change-password")

    # the server ends every other session and keeps this one: still signed in, its refresh token works
    assert other.get("/auth/me").status_code == 401
    assert expire_access_and_reload(page) == 200
    expect(page.locator("h1")).to_have_text("Settings")
    expect(page.locator("#whoami")).to_contain_text("dana")
    login = f"{server.base_url}/api/v1/auth/login"
    assert httpx.post(login, json={"email": dana, "password": "dana-password"}).status_code == 401
    assert httpx.post(login, json={"email": dana, "password": "a-better-password"}).status_code == 200
    other.close()


def test_invitations_accepted_join_the_switcher_and_declined_go(
        server: KnoraServer, new_page: Callable[..., Any]) -> None:
    erin = new_user(server, "erin")  # invited to the default tenant as a viewer, not yet a member
    with user_api(server, OWNER_EMAIL, OWNER_PASSWORD) as owner:
        blue, _ = new_team(owner, "Blue team")
        red, red_headers = new_team(owner, "Red team")
        invite(owner, blue, erin, "contributor")
        invite(owner, red, erin, "admin")
        default_name = owner.get("/auth/me").json()["data"]["tenant"]["name"]

        page = off_loopback(new_page())
        sign_in(page, server, "/chat", erin, "erin-password")
        expect(page).to_have_url(f"{server.base_url}/team")  # no team yet: sent where the invitations are
        expect(page.locator("#pending-invitations")).to_have_text("3")
        expect(page.get_by_role("alert").filter(has_text="not a member")).to_be_visible()
        mine = page.locator("#my-invitations li.my-invitation")
        expect(mine).to_have_count(3)
        expect(mine.filter(has_text="Blue team")).to_contain_text("Contributor")
        shot(page, "my-invitations")

        mine.filter(has_text=default_name).get_by_role("button", name="Accept").click()
        expect(page.locator("#members tr.member", has_text=erin)).to_be_visible()  # a member now
        expect(page.locator("#pending-invitations")).to_have_text("2")
        expect(page.locator("#tenant-name")).to_have_text(default_name)  # one team: no switcher yet
        expect(page.locator("#tenant")).to_have_count(0)

        mine.filter(has_text="Blue team").get_by_role("button", name="Accept").click()
        switcher = page.locator("#tenant")
        expect(switcher.locator("option")).to_have_count(2)
        expect(switcher.locator("option", has_text="Blue team")).to_have_text("Blue team · Contributor")
        expect(mine).to_have_count(1)

        mine.filter(has_text="Red team").get_by_role("button", name="Decline").click()
        page.locator("dialog").get_by_role("button", name="Decline").click()
        expect(page.locator("#my-invitations")).to_have_count(0)  # none left, and erin has a team
        expect(page.locator("#pending-invitations")).to_have_count(0)
        expect(switcher.locator("option")).to_have_count(2)  # declined: Red team is not among them
        invitations = owner.get(f"/tenants/{red}/invitations", headers=red_headers).json()["data"]
        assert [i["status"] for i in invitations["invitations"]] == ["declined"]

        switcher.select_option(str(blue))
        expect(page.locator("#members tr.member")).to_have_count(2)  # the owner and erin
        expect(page.locator("#members tr.member", has_text=erin)).to_contain_text("Contributor")
        with user_api(server, erin, "erin-password") as as_erin:
            assert as_erin.get("/me/invitations").json()["data"]["invitations"] == []
            r = as_erin.post(f"/me/invitations/{invitations['invitations'][0]['id']}/accept")
            assert r.status_code == 409  # a declined invitation stays declined


def test_a_team_of_more_than_100_members_pages(server: KnoraServer, new_page: Callable[..., Any]) -> None:
    with user_api(server, OWNER_EMAIL, OWNER_PASSWORD) as owner:
        big, big_headers = new_team(owner, "Big team")
        for n in range(BIG_TEAM):
            email = f"big{n:03d}@example.org"
            invite(owner, big, email, "viewer")
            r = httpx.post(f"{server.base_url}/api/v1/auth/register",
                           json={"username": f"big{n:03d}", "email": email, "password": "big-password"})
            assert r.status_code == 201, r.text
            r = owner.post(f"/tenants/{big}/members", json={"email": email, "role": "viewer"},
                           headers=big_headers)
            assert r.status_code == 201, r.text

        page = off_loopback(new_page())
        sign_in(page, server, "/team")
        page.locator("#tenant").select_option(str(big))
        rows = page.locator("#members tr.member")
        expect(rows).to_have_count(100)
        status = page.locator("#members-page")
        expect(status).to_have_text(f"Page 1 of 2 · {BIG_TEAM + 1} members")
        expect(page.locator("#members-prev")).to_be_disabled()
        with page.expect_request(lambda req: "/members?" in req.url) as listed:
            page.locator("#members-next").click()
        assert "page=2" in listed.value.url
        assert "page_size=100" in listed.value.url
        expect(rows).to_have_count(BIG_TEAM + 1 - 100)
        expect(status).to_have_text(f"Page 2 of 2 · {BIG_TEAM + 1} members")
        expect(page.locator("#members-next")).to_be_disabled()
        shown = set(rows.locator("td:nth-child(2)").all_inner_texts())
        last = f"big{BIG_TEAM - 1:03d}@example.org"
        assert last in shown

        rows.filter(has_text=last).get_by_role("button", name="Remove").click()
        page.locator("dialog").get_by_role("button", name="Remove").click()
        expect(status).to_have_text(f"Page 2 of 2 · {BIG_TEAM} members")  # still on page 2
        expect(rows).to_have_count(BIG_TEAM - 100)
        page.locator("#members-prev").click()
        expect(rows).to_have_count(100)
        first_page = set(rows.locator("td:nth-child(2)").all_inner_texts())
        assert not first_page & shown  # no member on both pages
        assert len(first_page | shown) == BIG_TEAM + 1

        # found by part of a name or e-mail (the server's q), from the first page
        page.locator("#member-search").fill("big12")
        expect(rows).to_have_count(9)  # big120 … big128: big129 was removed
        expect(page.locator("#members-page")).to_have_count(0)  # one page: no pager
        page.locator("#member-search").fill("nobody-like-this")
        expect(page.locator("#members-none")).to_have_text("No member matches.")
        page.locator("#member-search").fill("")
        expect(rows).to_have_count(100)
        expect(status).to_have_text(f"Page 1 of 2 · {BIG_TEAM} members")
