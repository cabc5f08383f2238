"""``GET /tenants/{id}/members`` in pages (issue 14): a team of more than 100 members is listed page by page,
every member exactly once, and the answer names the page and page size it served (a page size above 100 is
served as 100, a page below 1 as the first)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TypedDict, cast

import httpx
import pytest

from knora.domain.access import Role
from knora.root import Services
from knora.settings import Settings
from tests.conftest import TEST_API_KEY, TEST_OWNER_EMAIL, client_for, started

pytestmark = pytest.mark.timeout(120)
TEAM = 130  # members besides the owner


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings()) as services:
        for n in range(TEAM):
            user = await services.accounts.register(f"member{n:03d}", f"member{n:03d}@example.org",
                                                    "member-password")
            await services.members.enrol(services.default_tenant_id, user.id, Role.VIEWER, "test")
        yield services


@pytest.fixture
async def http(c: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(c, **{"X-API-Key": TEST_API_KEY}) as client:
        yield client


class MembersPage(TypedDict):
    members: list[dict[str, str]]
    total: int
    page: int
    page_size: int


async def _page(http: httpx.AsyncClient, tid: int, **query: str | int) -> MembersPage:
    r = await http.get(f"/api/v1/tenants/{tid}/members", params=query)
    assert r.status_code == 200, r.text
    return cast(MembersPage, r.json()["data"])


async def test_more_than_100_members_come_in_pages(c: Services, http: httpx.AsyncClient) -> None:
    tid = c.default_tenant_id
    first = await _page(http, tid, page=1, page_size=100)
    second = await _page(http, tid, page=2, page_size=100)
    assert first["total"] == second["total"] == TEAM + 1
    assert (first["page"], first["page_size"], second["page"]) == (1, 100, 2)
    rows = [m["email"] for m in first["members"] + second["members"]]
    assert len(first["members"]) == 100
    assert len(rows) == len(set(rows)) == TEAM + 1
    assert set(rows) == {TEST_OWNER_EMAIL} | {f"member{n:03d}@example.org" for n in range(TEAM)}
    assert (await _page(http, tid, page=3, page_size=100))["members"] == []


async def test_the_answer_names_the_page_it_served(c: Services, http: httpx.AsyncClient) -> None:
    tid = c.default_tenant_id
    capped = await _page(http, tid, page_size=1000)
    assert capped["page_size"] == 100
    assert len(capped["members"]) == 100
    low = await _page(http, tid, page=0, page_size=0)
    assert (low["page"], low["page_size"]) == (1, 1)
    assert len(low["members"]) == 1
    found = await _page(http, tid, q="member12", page_size=100)
    assert found["total"] == 10  # member120 … member129
    r = await http.get(f"/api/v1/tenants/{tid}/members", params={"page": "two"})
    assert r.status_code in (400, 422)
    assert r.json()["success"] is False
