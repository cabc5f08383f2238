"""Request budgets per caller: ``RateLimiter.hit(key, cost, budget)`` says whether a request may run now and,
when not, how long to wait.

Both implementations run the same GCRA (generic cell rate algorithm, a token bucket kept as one timestamp per
key): a budget of ``limit`` per ``window_seconds`` refills smoothly at ``limit / window`` per second and
allows a burst of the whole ``limit``. One number per key, so the Redis implementation is one atomic script
on the server's clock and the memory one a dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Budget:
    limit: int  # requests (cost units) per window, also the largest burst
    window_seconds: float = 60.0

    @property
    def interval(self) -> float:
        """Seconds one unit of cost takes to refill."""
        return self.window_seconds / self.limit


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: float = 0.0  # seconds until the same request would be allowed (0 when allowed)


class RateLimiter(Protocol):
    async def hit(self, key: str, budget: Budget, cost: int = 1) -> Decision:
        """Spends ``cost`` from ``key``'s budget if it has that much left; a refused hit spends nothing."""
        ...

    async def close(self) -> None: ...


def gcra(now: float, tat: float, budget: Budget, cost: int) -> tuple[Decision, float]:
    """(decision, the key's new theoretical arrival time). ``tat`` is the stored one (0 when none)."""
    start = max(tat, now)
    new_tat = start + cost * budget.interval
    allow_at = new_tat - budget.window_seconds
    # ``(now + w) − w`` can round to just above ``now``: without the microsecond of slack (the Redis script's
    # resolution) a fresh key's last unit of burst — all of a budget of 1 — was refused "for 1 s" at random
    if allow_at > now + 1e-6:
        return Decision(False, allow_at - now), tat
    return Decision(True), new_tat
