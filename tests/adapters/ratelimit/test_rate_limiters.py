"""The two rate limiters share one contract (a burst of the whole budget, then refusals that say how long to
wait and spend nothing, keys apart, refill); Redis runs for real."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from knora.adapters.ratelimit.memory import MemoryRateLimiter
from knora.adapters.ratelimit.redis import RedisRateLimiter
from knora.ports.rate_limit import Budget, RateLimiter, gcra
from tests.conftest import REDIS_URL
from tests.polling import eventually


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.integration])])
async def limiter(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[RateLimiter]:
    made: RateLimiter = MemoryRateLimiter() if request.param == "memory" else RedisRateLimiter(
        REDIS_URL, prefix=redis_prefix)
    yield made
    await made.close()


class TestRateLimiterContract:
    async def test_a_burst_of_the_budget_then_a_refusal_with_the_wait(self, limiter: RateLimiter) -> None:
        budget = Budget(5, 60.0)
        assert [(await limiter.hit("a", budget)).allowed for _ in range(5)] == [True] * 5
        refused = await limiter.hit("a", budget)
        assert not refused.allowed
        assert 0 < refused.retry_after <= budget.interval  # one unit refills in 12 s

    async def test_keys_have_their_own_budget(self, limiter: RateLimiter) -> None:
        budget = Budget(1, 60.0)
        assert (await limiter.hit("a", budget)).allowed
        assert not (await limiter.hit("a", budget)).allowed
        assert (await limiter.hit("b", budget)).allowed

    async def test_the_budget_refills(self, limiter: RateLimiter) -> None:
        budget = Budget(2, 0.2)  # one unit per 0.1 s
        assert (await limiter.hit("a", budget)).allowed
        assert (await limiter.hit("a", budget)).allowed
        assert (await eventually(lambda: _allowed(limiter, "a", budget))) is True


async def _allowed(limiter: RateLimiter, key: str, budget: Budget) -> bool:
    return (await limiter.hit(key, budget)).allowed


class TestMemoryRateLimiter:
    async def test_refusals_spend_nothing_and_time_refills(self) -> None:
        clock = Clock()
        limiter = MemoryRateLimiter(clock)
        budget = Budget(2, 60.0)  # 30 s per unit
        assert (await limiter.hit("k", budget)).allowed
        assert (await limiter.hit("k", budget)).allowed
        for _ in range(10):
            assert (await limiter.hit("k", budget)).retry_after == pytest.approx(30.0)
        clock.now += 30.0
        assert (await limiter.hit("k", budget)).allowed
        assert not (await limiter.hit("k", budget)).allowed

    async def test_full_buckets_are_forgotten(self) -> None:
        clock = Clock()
        limiter = MemoryRateLimiter(clock)
        for i in range(100):
            await limiter.hit(f"k{i}", Budget(10, 60.0))
        clock.now += 7.0  # each spent one 6 s unit: all full again
        limiter._prune(clock.now)
        assert len(limiter) == 0


def test_gcra_costs() -> None:
    budget = Budget(10, 10.0)
    decision, tat = gcra(0.0, 0.0, budget, 10)
    assert decision.allowed
    assert tat == 10.0
    decision, tat2 = gcra(0.0, tat, budget, 1)
    assert not decision.allowed
    assert tat2 == tat
    assert decision.retry_after == pytest.approx(1.0)


@pytest.mark.parametrize("now", [500.49469980918883, 4242.0001, 0.0, 1e6 + 0.1])
def test_a_fresh_budget_of_one_allows_its_first_request(now: float) -> None:
    """``(now + 60) − 60`` rounds above ``now`` for some clocks (500.4946998… is one): the single unit of a
    1/min budget must still be there, and the second request refused for the whole minute."""
    budget = Budget(1, 60.0)
    first, tat = gcra(now, 0.0, budget, 1)
    assert first.allowed
    second, _ = gcra(now, tat, budget, 1)
    assert not second.allowed
    assert second.retry_after == pytest.approx(60.0)
