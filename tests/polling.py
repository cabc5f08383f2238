"""Wait for a condition by polling it until a generous deadline, instead of sleeping a fixed short while and
hoping the other task got there first: on a loaded machine a background task can lag by a second or more."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE_S = 30.0


async def eventually(check: Callable[[], T | Awaitable[T]], *, timeout: float = DEADLINE_S,
                     interval: float = 0.01) -> T:
    """``check()``'s first truthy value, or its last value once ``timeout`` seconds have passed (the caller's
    own assertion then fails with its own message)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value or loop.time() >= deadline:
            return value  # type: ignore[return-value]
        await asyncio.sleep(interval)
