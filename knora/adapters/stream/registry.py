"""Stream-log and stop-signal implementations by name (``settings.stream_log``).

The two registries have the same names: one backend serves both. Each factory imports its implementation when
called, so the embedded profile never imports redis, and settings can check ``stream_log`` without importing
it.
"""

from __future__ import annotations

from collections.abc import Callable

from knora.domain.registry import Registry
from knora.ports.stream_log import StopSignals, StreamLog
from knora.ports.turn_lease import TurnLeases
from knora.settings import Settings


def _memory_log(s: Settings) -> StreamLog:
    from knora.adapters.stream.memory import MemoryStreamLog

    return MemoryStreamLog(ttl_seconds=s.stream_ttl_seconds)


def _redis_log(s: Settings) -> StreamLog:
    from knora.adapters.stream.redis import RedisStreamLog

    return RedisStreamLog(s.redis_url, prefix=s.redis_prefix, ttl_seconds=s.stream_ttl_seconds)


def _memory_stop(s: Settings) -> StopSignals:
    from knora.adapters.stream.memory import MemoryStopSignals

    return MemoryStopSignals(ttl_seconds=s.stream_ttl_seconds)


def _redis_stop(s: Settings) -> StopSignals:
    from knora.adapters.stream.redis_stops import RedisStopSignals

    return RedisStopSignals(s.redis_url, prefix=s.redis_prefix, ttl_seconds=s.stream_ttl_seconds)


STREAM_LOGS: Registry[Callable[[Settings], StreamLog]] = Registry(
    "stream log", {"memory": _memory_log, "redis": _redis_log})
STOP_SIGNALS: Registry[Callable[[Settings], StopSignals]] = Registry(
    "stream log", {"memory": _memory_stop, "redis": _redis_stop})


def build(settings: Settings) -> tuple[StreamLog, StopSignals]:
    """(StreamLog, StopSignals) for the configured profile; both share the same backend."""
    name = settings.stream_log
    return STREAM_LOGS.get(name)(settings), STOP_SIGNALS.get(name)(settings)


def build_leases(settings: Settings) -> TurnLeases:
    """Turn leases on the same backend as the log: shared on Redis, this process's own on memory."""
    if settings.stream_log == "redis":
        from knora.adapters.stream.redis_leases import RedisTurnLeases

        return RedisTurnLeases(settings.redis_url, prefix=settings.redis_prefix,
                               ttl_seconds=settings.turn_lease_seconds)
    from knora.adapters.stream.memory import LocalTurnLeases

    return LocalTurnLeases(ttl_seconds=settings.turn_lease_seconds)
