"""Per-caller budgets over HTTP: 429 with the envelope (WeKnora's code 1006) and ``Retry-After``; expensive
calls have their own budget; ``/health`` is free; unknown keys share their address's budget; on the scale
profile the budget lives in Redis."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from knora.adapters.ratelimit.redis import RedisRateLimiter
from knora.api.app import create_app
from knora.api.rate_limit import is_heavy
from knora.settings import Settings
from tests.conftest import REDIS_URL, client_for, started

pytestmark = pytest.mark.integration


async def test_past_the_budget_429_with_retry_after(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(rate_limit_per_minute=3, rate_limit_loopback=True)
    async with started(settings) as c, client_for(c) as http:
        for _ in range(3):
            assert (await http.get("/api/v1/knowledge-bases")).status_code == 200
        assert (await http.get("/health")).status_code == 200  # not counted
        r = await http.get("/api/v1/knowledge-bases")
        assert r.status_code == 429
        assert 1 <= int(r.headers["Retry-After"]) <= 20  # one of 3 per minute refills in 20 s
        body = r.json()
        assert body["success"] is False
        assert body["error"]["code"] == 1006
        assert "retry after" in body["error"]["message"]
        assert r.headers["X-Request-ID"]


async def test_keys_and_unknown_callers_have_their_own_budgets(
        make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings(rate_limit_per_minute=2, rate_limit_loopback=True)) as c:
        _tenant, other_key = await c.tenants.create("other")
        async with client_for(c) as http, client_for(c, **{"X-API-Key": other_key}) as other, \
                client_for(c, **{"X-API-Key": "sk-made-up-1"}) as bogus1, \
                client_for(c, **{"X-API-Key": "sk-made-up-2"}) as bogus2:
            codes = [(await http.get("/api/v1/knowledge-bases")).status_code for _ in range(3)]
            assert codes == [200, 200, 429]
            assert (await other.get("/api/v1/knowledge-bases")).status_code == 200
            # made-up keys are one caller (the client address): rotating them buys nothing
            assert [(await bogus1.get("/api/v1/knowledge-bases")).status_code,
                    (await bogus2.get("/api/v1/knowledge-bases")).status_code,
                    (await bogus1.get("/api/v1/knowledge-bases")).status_code] == [401, 401, 429]


async def test_expensive_calls_have_their_own_budget(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(rate_limit_per_minute=100, rate_limit_heavy_per_minute=1,
                             rate_limit_loopback=True)
    async with started(settings) as c, client_for(c) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "k"})).json()["data"]["id"]
        search = {"query": "anything", "knowledge_base_ids": [kb]}
        assert (await http.post("/api/v1/knowledge-search", json=search)).status_code == 200
        refused = await http.post("/api/v1/knowledge-search", json=search)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == 1006
        assert (await http.get(f"/api/v1/knowledge-bases/{kb}")).status_code == 200  # cheap calls still run


async def test_this_machine_is_not_limited_unless_asked_but_a_proxied_client_is(
        make_settings: Callable[..., Settings]) -> None:
    """Off by default on loopback (local scripts, the CLI, benchmarks); a request a proxy on this machine
    forwarded (``X-Forwarded-For`` / ``Forwarded``) comes from elsewhere and keeps its budget, as does a
    client whose address is not loopback. Each client below has a key of its own: its own budget."""
    async with started(make_settings(rate_limit_per_minute=2)) as c:
        async with client_for(c) as local:
            assert {(await local.get("/api/v1/knowledge-bases")).status_code for _ in range(6)} == {200}
        for i, header in enumerate(({"X-Forwarded-For": "203.0.113.7"}, {"Forwarded": "for=203.0.113.8"})):
            _t, key = await c.tenants.create(f"proxied {i}")
            async with client_for(c, **header, **{"X-API-Key": key}) as proxied:
                codes = [(await proxied.get("/api/v1/knowledge-bases")).status_code for _ in range(3)]
                assert codes == [200, 200, 429], header
        _t, key = await c.tenants.create("far away")
        remote = httpx.ASGITransport(app=create_app(services=c), client=("203.0.113.9", 4000))
        async with httpx.AsyncClient(transport=remote, base_url="http://knora.test",
                                     headers={"X-API-Key": key}) as far:
            codes = [(await far.get("/api/v1/knowledge-bases")).status_code for _ in range(3)]
            assert codes == [200, 200, 429]


def test_which_calls_are_expensive() -> None:
    assert is_heavy("POST", "/api/v1/knowledge-chat/s1")
    assert is_heavy("POST", "/api/v1/agent-chat/s1")
    assert is_heavy("POST", "/api/v1/knowledge-search")
    assert is_heavy("POST", "/api/v1/knowledge-bases/kb1/hybrid-search")
    assert is_heavy("POST", "/api/v1/knowledge-bases/kb1/knowledge/file")
    assert is_heavy("POST", "/api/v1/knowledge-bases/kb1/knowledge/url")
    assert is_heavy("POST", "/api/v1/knowledge-bases/kb1/knowledge/manual")
    assert is_heavy("POST", "/api/v1/evaluation")  # ingests a whole data set and asks every question
    assert not is_heavy("GET", "/api/v1/evaluation")
    assert not is_heavy("GET", "/api/v1/knowledge-chat/s1")
    assert not is_heavy("POST", "/api/v1/sessions/s1/stop")
    assert not is_heavy("POST", "/api/v1/knowledge-bases")


@pytest.mark.redis
async def test_the_scale_profile_keeps_budgets_in_redis(make_settings: Callable[..., Settings],
                                                        redis_prefix: str) -> None:
    settings = make_settings(stream_log="redis", redis_url=REDIS_URL, redis_prefix=redis_prefix,
                             rate_limit_per_minute=2, rate_limit_loopback=True)
    async with started(settings) as a, started(settings) as b:  # two replicas, one budget
        assert isinstance(a.rate_limiter, RedisRateLimiter)
        async with client_for(a) as http_a, client_for(b) as http_b:
            assert (await http_a.get("/api/v1/knowledge-bases")).status_code == 200
            assert (await http_b.get("/api/v1/knowledge-bases")).status_code == 200
            assert (await http_a.get("/api/v1/knowledge-bases")).status_code == 429
            assert (await http_b.get("/api/v1/knowledge-bases")).status_code == 429
