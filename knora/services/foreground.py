"""Which work a user is waiting for right now, so that bulk work in the same process can step aside.

CPython runs one thread's Python code at a time. A thread building a large document's 150k records holds
the interpreter lock for one switch interval after another, and each of a chat turn's many thread hops then
waits for it (issue 18: a turn's first token up to 4× slower in the seconds after a 50 MB upload). Nice
values cannot help — both threads are in one process, and the lock has no priorities. So chat turns say
they are running (``FOREGROUND.hold()``, released when the turn ends) and ingestion's bulk loops
(``knora.services.ingest.heap.sheltered``) pause while any turn runs — for at most as long as they have
worked, so under continuous chat ingestion still gets half of the interpreter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Foreground:
    """A count of the turns in flight in this process (thread-safe)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._quiet = threading.Event()
        self._quiet.set()

    @property
    def busy(self) -> bool:
        return self._count > 0

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
