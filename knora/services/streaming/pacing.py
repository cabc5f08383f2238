"""How long a turn may hold answer/reasoning text before it goes to the stream log as one event.

Every stream-log entry costs the process the same again for each follower (wake-up, SSE frame, socket write) and,
on Redis, a round trip — while a model delta is a few characters. One process streaming to many clients at once
therefore runs out of CPU on events, not on text. The pacer gives each stream that writes text a **hold**: after a
text event, deltas that arrive within the hold are merged into the next event (the bus does it, ``bus.py``).

The hold has two parts:

- a **frame budget** (text events per second, all streams together): with ``n`` streams writing text, each may
  append at most once per ``n / budget`` seconds. Below the budget the hold is shorter than the gap between two
  model deltas, so nothing is merged and every delta goes out the moment it arrives;
- a **load factor** from the event loop's own lag: a timer checks every ``TICK_S`` how late the loop runs it.
  While the loop is late by more than ``lag_target_s`` the factor grows (×1.5 per tick), when it is back under half
  the target it decays (×0.8 per tick) to 1. So a slower machine, or one busy with other work, merges more instead
  of delivering the same text late; the budget does not have to be tuned per machine.

The hold never exceeds ``max_hold_s``. Text is never dropped or reordered: see ``bus.py``.
"""

from __future__ import annotations

import asyncio

TICK_S = 0.05  # how often the loop's lag is sampled while any stream writes text
GROW, DECAY = 1.5, 0.8
MAX_FACTOR = 64.0


class DeltaPacer:
    """Shared by every turn of a process; a bus registers while its turn writes text."""

    def __init__(self, frame_budget: int = 10_000, max_hold_s: float = 0.25, lag_target_s: float = 0.01) -> None:
        if frame_budget < 0 or max_hold_s < 0 or lag_target_s <= 0:
            raise ValueError("frame_budget and max_hold_s must not be negative, lag_target_s must be positive")
        self.frame_budget = frame_budget
        self.max_hold_s = max_hold_s
        self.lag_target_s = lag_target_s
        self.streams = 0  # turns that have started writing text and not ended
        self.factor = 1.0  # the load factor (≥ 1)
        self.hold = 0.0  # seconds a stream waits after a text event before the next (0: every delta at once)
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0

    def _update(self) -> None:
        if not self.frame_budget:
            self.hold = 0.0
        else:
            self.hold = min(self.max_hold_s, self.streams / self.frame_budget * self.factor)

    def enter(self) -> None:
        self.streams += 1
        self._update()
        if self._timer is None and self.frame_budget:
            loop = asyncio.get_running_loop()
            self._due = loop.time() + TICK_S
            self._timer = loop.call_at(self._due, self._tick)

    def leave(self) -> None:
        self.streams = max(0, self.streams - 1)
        if not self.streams:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.factor = 1.0
        self._update()

    def observe_lag(self, lag: float) -> None:
        """One sample of how late the loop ran a timer."""
        if lag > self.lag_target_s:
            self.factor = min(MAX_FACTOR, self.factor * GROW)
        elif lag < self.lag_target_s / 2:
            self.factor = max(1.0, self.factor * DECAY)
        self._update()

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.observe_lag(now - self._due)
        self._due = now + TICK_S
        self._timer = loop.call_at(self._due, self._tick) if self.streams else None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
