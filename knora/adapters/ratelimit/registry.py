"""The rate limiter of a profile: on Redis when the stream log is (the scale profile: replicas share one
budget per caller), else in this process's memory. Imported lazily: the embedded profile never imports
redis."""

from __future__ import annotations

from knora.ports.rate_limit import RateLimiter
from knora.settings import Settings


def build(settings: Settings) -> RateLimiter:
    if settings.stream_log == "redis":
        from knora.adapters.ratelimit.redis import RedisRateLimiter

        return RedisRateLimiter(settings.redis_url, prefix=settings.redis_prefix)
    from knora.adapters.ratelimit.memory import MemoryRateLimiter

    return MemoryRateLimiter()
