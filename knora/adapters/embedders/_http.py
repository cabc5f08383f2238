"""Shared bits of the HTTP embedders: retry policy and vector assembly."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


async def with_retries(call: Callable[[], Awaitable[T]], is_transient: Callable[[BaseException], bool],
                       attempts: int = 4, base_delay: float = 0.5, max_delay: float = 8.0) -> T:
    """Retry ``call`` on transient errors with exponential backoff and jitter; other errors propagate at
    once."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception as exc:
            if attempt == attempts - 1 or not is_transient(exc):
                raise
            delay = min(max_delay, base_delay * (2 ** attempt)) * (0.5 + random.random() / 2)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
