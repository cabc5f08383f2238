"""Bulk work that keeps out of interactive work's way: the foreground (what a user waits for) and the loops
that step aside for it.

CPython runs one thread's Python code at a time. A thread building a large document's 150k records holds
the interpreter lock for one switch interval after another, and each of a chat turn's many thread hops then
waits for it (issue 18: a turn's first token up to 4× slower in the seconds after a 50 MB upload). Nice
values cannot help — both threads are in one process, and the lock has no priorities. So chat turns say
they are running (``FOREGROUND.hold()``, released when the turn ends) and ingestion's bulk loops
(``sheltered`` below) pause while any turn runs — for at most as long as they have
worked, so under continuous chat ingestion still gets half of the interpreter.

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
  (``FOREGROUND``) — never longer in total than the loop has worked, so ingestion keeps at
  least half of the interpreter under continuous chat.

Loops of fewer items than either never freeze or pause; a loop on the event loop's thread never pauses.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

FREEZE_EVERY = 10_000
CHECK_EVERY = 500  # ~2–5 ms of record building between two looks at the foreground
MAX_PAUSE_SECONDS = 0.5  # one pause at most; then the loop works again for as long as it paused


class Foreground:
    """A count of the turns in flight in this process (thread-safe)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._quiet = threading.Event()
        self._quiet.set()

    @property
    def busy(self) -> bool:
        return not self._quiet.is_set()

    def hold(self) -> Callable[[], None]:
        """Marks one turn as running; the returned function ends it (calling it again does nothing)."""
        with self._lock:
            self._count += 1
            self._quiet.clear()
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                self._count -= 1
                if self._count == 0:
                    self._quiet.set()

        return release

    def wait_quiet(self, seconds: float) -> bool:
        """Blocks (a worker thread, never the event loop) until no turn runs or ``seconds`` passed."""
        return self._quiet.wait(seconds)


FOREGROUND = Foreground()  # this process's turns (one per process: the interpreter lock is per process)


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
