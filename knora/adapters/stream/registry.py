"""Stream-log and stop-signal implementations by name (``settings.stream_log``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from knora.settings import Settings


def _memory_log(s: Settings) -> Any:
    from knora.adapters.stream.memory import MemoryStreamLog

    return MemoryStreamLog(ttl_seconds=s.stream_ttl_seconds)


def _redis_log(s: Settings) -> Any:
    from knora.adapters.stream.redis import RedisStreamLog

    return RedisStreamLog(s.redis_url, prefix=s.redis_prefix, ttl_seconds=s.stream_ttl_seconds)


def _memory_stop(s: Settings) -> Any:
    from knora.adapters.stream.memory import MemoryStopSignals

    return MemoryStopSignals(ttl_seconds=s.stream_ttl_seconds)


def _redis_stop(s: Settings) -> Any:
    from knora.adapters.stream.redis import RedisStopSignals

    return RedisStopSignals(s.redis_url, prefix=s.redis_prefix, ttl_seconds=s.stream_ttl_seconds)


STREAM_LOGS: dict[str, Callable[[Settings], Any]] = {"memory": _memory_log, "redis": _redis_log}
STOP_SIGNALS: dict[str, Callable[[Settings], Any]] = {"memory": _memory_stop, "redis": _redis_stop}


def build(settings: Settings) -> tuple[Any, Any]:
    """(StreamLog, StopSignals) for the configured profile; both share the same backend."""
    name = settings.stream_log
    if name not in STREAM_LOGS:
        raise ValueError(f"unknown stream_log {name!r}; choose one of {sorted(STREAM_LOGS)}")
    return STREAM_LOGS[name](settings), STOP_SIGNALS[name](settings)
