"""Per-caller budgets over HTTP: 429 with the envelope (WeKnora's code 1006) and ``Retry-After``; expensive
calls have their own budget; ``/health`` is free; unknown keys share their address's budget; on the scale
profile the budget lives in Redis."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knora.adapters.ratelimit.redis import RedisRateLimiter
from knora.api.rate_limit import is_heavy
from knora.settings import Settings
from tests.conftest import REDIS_URL, client_for, started

pytestmark = pytest.mark.integration


async def test_past_the_budget_429_with_retry_after(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings(rate_limit_per_minute=3)) as c, client_for(c) as http:
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
    async with started(make_settings(rate_limit_per_minute=2)) as c:
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
    async with started(make_settings(rate_limit_per_minute=100, rate_limit_heavy_per_minute=1)) as c, \
            client_for(c) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "k"})).json()["data"]["id"]
        search = {"query": "anything", "knowledge_base_ids": [kb]}
        assert (await http.post("/api/v1/knowledge-search", json=search)).status_code == 200
        refused = await http.post("/api/v1/knowledge-search", json=search)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == 1006
        assert (await http.get(f"/api/v1/knowledge-bases/{kb}")).status_code == 200  # cheap calls still run


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
                             rate_limit_per_minute=2)
    async with started(settings) as a, started(settings) as b:  # two replicas, one budget
        assert isinstance(a.rate_limiter, RedisRateLimiter)
        async with client_for(a) as http_a, client_for(b) as http_b:
            assert (await http_a.get("/api/v1/knowledge-bases")).status_code == 200
            assert (await http_b.get("/api/v1/knowledge-bases")).status_code == 200
            assert (await http_a.get("/api/v1/knowledge-bases")).status_code == 429
            assert (await http_b.get("/api/v1/knowledge-bases")).status_code == 429
