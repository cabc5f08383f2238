"""``RateLimiter`` on Redis: the scale profile, one budget per caller shared by every replica.

One Lua script per hit (atomic, on the Redis server's clock, so replicas with skewed clocks agree): the key
holds the GCRA theoretical arrival time in microseconds and expires when the bucket is full again.
"""

from __future__ import annotations

from knora.adapters.stream.redis import waiting_client
from knora.ports.rate_limit import Budget, Decision

# KEYS[1] the bucket; ARGV: interval (µs per unit), window (µs), cost. Returns {allowed, retry_after µs}.
_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + cost * interval
local allow_at = new_tat - window
if allow_at > now then
  return {0, allow_at - now}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.max(1, math.ceil((new_tat - now) / 1000)))
return {1, 0}
"""


class RedisRateLimiter:
    def __init__(self, url: str, prefix: str = "knora") -> None:
        self.prefix = prefix
        self._client = waiting_client(url)
        self._script = self._client.register_script(_GCRA)

    async def hit(self, key: str, budget: Budget, cost: int = 1) -> Decision:
        interval = max(int(budget.interval * 1_000_000), 1)
        window = int(budget.window_seconds * 1_000_000)
        allowed, wait = await self._script(keys=[f"{self.prefix}:rate:{key}"], args=[interval, window, cost])
        return Decision(bool(allowed), int(wait) / 1_000_000)

    async def close(self) -> None:
        await self._client.aclose()
