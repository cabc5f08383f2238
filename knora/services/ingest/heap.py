"""A large document's loops: out of the cyclic collector's walks and out of chat's way.

A 50 MB text becomes ~150k chunk drafts, ~150k chunk records and ~150k retrieval rows, each several
objects the cyclic collector tracks (the model, its ``__dict__``, its metadata dict and lists). None of them
is part of a reference cycle — reference counting frees them when the job lets go — but while they are young
the collector walks them at every collection of its younger generations, and once they are old a full
collection walks all of them: one interpreter call of 0.2–0.4 s each (measured with an event-loop watchdog
during a 50 MB upload), during which no chat turn can run.

``sheltered`` hands out the items of such a loop and

* every ``FREEZE_EVERY`` of them moves everything the collector tracks into its permanent generation
  (``gc.freeze()``, a constant-time list splice), which no collection walks: the young generations never hold
  more than a few ten thousand records. What it also freezes is whatever else happens to be young at that
  moment; should any of that be cyclic garbage, it is never collected — a few kilobytes per large document,
  against seconds of stalls;
* every ``CHECK_EVERY`` of them, in a worker thread, pauses while a chat turn runs
  (``knora.services.foreground``) — never longer in total than the loop has worked, so ingestion keeps at
  least half of the interpreter under continuous chat.

Loops of fewer items than either never freeze or pause; a loop on the event loop's thread never pauses.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from knora.services.foreground import FOREGROUND, Foreground

T = TypeVar("T")

FREEZE_EVERY = 10_000
CHECK_EVERY = 500  # ~2–5 ms of record building between two looks at the foreground
MAX_PAUSE_SECONDS = 0.5  # one pause at most; then the loop works again for as long as it paused


def sheltered(items: Iterable[T], every: int = FREEZE_EVERY, *, check_every: int = CHECK_EVERY,
              foreground: Foreground = FOREGROUND) -> Iterator[T]:
    """``items``, freezing the collector's generations after every ``every`` of them and stepping aside for
    chat turns after every ``check_every``."""
    may_pause = not _on_event_loop()
    started = time.perf_counter()
    paused = 0.0
    for n, item in enumerate(items, 1):
        yield item
        if n % every == 0:
            gc.freeze()
        if may_pause and n % check_every == 0 and foreground.busy:
            worked = time.perf_counter() - started - paused
            budget = min(MAX_PAUSE_SECONDS, worked - paused)
            if budget > 0:
                t = time.perf_counter()
                foreground.wait_quiet(budget)
                paused += time.perf_counter() - t


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
