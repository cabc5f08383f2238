"""``RateLimiter`` in this process's memory: the embedded profile (one process, so one set of buckets)."""

from __future__ import annotations

import time
from collections.abc import Callable

from knora.ports.rate_limit import Budget, Decision, gcra

PRUNE_EVERY = 4096  # hits between sweeps of keys whose bucket is full again (an idle key costs nothing)


class MemoryRateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tat: dict[str, float] = {}
        self._hits = 0

    async def hit(self, key: str, budget: Budget, cost: int = 1) -> Decision:
        now = self._clock()
        self._hits += 1
        if self._hits % PRUNE_EVERY == 0:
            self._prune(now)
        decision, tat = gcra(now, self._tat.get(key, 0.0), budget, cost)
        if decision.allowed:
            self._tat[key] = tat
        return decision

    def _prune(self, now: float) -> None:
        """A key whose theoretical arrival time has passed has its whole budget back: same as no entry."""
        self._tat = {k: t for k, t in self._tat.items() if t > now}

    def __len__(self) -> int:
        return len(self._tat)

    async def close(self) -> None:
        self._tat.clear()
