"""One first-token wait shared by the attempts of a retry loop.

The model wrapper (``knora.adapters.llm.deadlines``) bounds how long a call may go without a first token.
A caller that retries transient failures (the agent) would otherwise give every attempt the whole bound
again; inside :func:`shared_first_token_window` the attempts share one wait, measured from the window's start
or the last delta any attempt produced. A context variable, because the retry loop and the wrapper meet only
through the ``ChatModel`` port, which has no place for it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class _Window:
    start: float  # when the current wait for a first token began (moved by every delta)


_WINDOW: ContextVar[_Window | None] = ContextVar("knora_first_token_window", default=None)


@contextlib.contextmanager
def shared_first_token_window() -> Iterator[None]:
    """Model calls made inside share one first-token wait (see the module docstring)."""
    token = _WINDOW.set(_Window(time.monotonic()))
    try:
        yield
    finally:
        _WINDOW.reset(token)


def wait_started(called: float) -> float:
    """When the wait for this call's first token began: the window's start, or ``called`` outside one."""
    window = _WINDOW.get()
    return window.start if window is not None else called


def note_progress() -> None:
    """A delta arrived: a retry after this point waits afresh."""
    window = _WINDOW.get()
    if window is not None:
        window.start = time.monotonic()
