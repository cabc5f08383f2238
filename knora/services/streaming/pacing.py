"""How long a turn may hold answer/reasoning text before it goes to the stream log as one event.

Every stream-log entry costs the process the same again for each follower (wake-up, SSE frame, socket write)
and, on Redis, a round trip — while a model delta is a few characters. One process streaming to many clients
at once therefore runs out of CPU on events, not on text. The pacer gives each stream that writes text a
**hold**: after a text event, deltas that arrive within the hold are merged into the next event (the bus does
it, ``bus.py``).

The hold has two parts:

- a **frame budget** (text events per second, all streams together): with ``n`` streams writing text, each may
  append at most once per ``n / budget`` seconds. Below the budget the hold is shorter than the gap between
  two model deltas, so nothing is merged and every delta goes out the moment it arrives;
- a **load factor** from the event loop itself: a timer looks every ``TICK_S`` at how late the loop ran it and
  at the share of that time the loop's thread was on the CPU. While the loop is late by more than
  ``lag_target_s`` or busy more than ``BUSY_HIGH`` of the time, the factor grows (×1.5 per tick); once it is
  back under half the lag target and under ``BUSY_LOW``, it decays (×0.8 per tick) to 1. So a slower machine,
  a costlier stream log (Redis) or a process busy with other work merges more instead of delivering the same
  text late; the budget does not have to be tuned per machine. (Lag alone misses a loop that is saturated by
  many short callbacks.)

The hold never exceeds ``max_hold_s``. Text is never dropped or reordered: see ``bus.py``.
"""

from __future__ import annotations

import asyncio
import time

TICK_S = 0.05  # how often the loop's lag is sampled while any stream writes text
GROW, DECAY = 1.5, 0.8
BUSY_HIGH, BUSY_LOW = 0.85, 0.6  # share of wall time the loop's thread used the CPU
MAX_FACTOR = 64.0


class DeltaPacer:
    """Shared by every turn of a process; a bus registers while its turn writes text."""

    def __init__(self, frame_budget: int = 10_000, max_hold_s: float = 0.25,
                 lag_target_s: float = 0.01) -> None:
        if frame_budget < 0 or max_hold_s < 0 or lag_target_s <= 0:
            raise ValueError("frame_budget and max_hold_s must not be negative, "
                             "lag_target_s must be positive")
        self.frame_budget = frame_budget
        self.max_hold_s = max_hold_s
        self.lag_target_s = lag_target_s
        self.streams = 0  # turns that have started writing text and not ended
        self.factor = 1.0  # the load factor (≥ 1)
        self.hold = 0.0  # seconds a stream waits after a text event before the next (0: every delta at once)
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._tick_at = 0.0  # loop time and loop-thread CPU time of the last tick
        self._tick_cpu = 0.0

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
            self._tick_at, self._tick_cpu = loop.time(), time.thread_time()
            self._due = self._tick_at + TICK_S
            self._timer = loop.call_at(self._due, self._tick)

    def leave(self) -> None:
        self.streams = max(0, self.streams - 1)
        if not self.streams:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.factor = 1.0
        self._update()

    def observe(self, lag: float, busy: float = 0.0) -> None:
        """One sample: how late the loop ran a timer (s), and the share of time its thread was on the CPU."""
        if lag > self.lag_target_s or busy > BUSY_HIGH:
            self.factor = min(MAX_FACTOR, self.factor * GROW)
        elif lag < self.lag_target_s / 2 and busy < BUSY_LOW:
            self.factor = max(1.0, self.factor * DECAY)
        self._update()

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        now, cpu = loop.time(), time.thread_time()
        self.observe(now - self._due, (cpu - self._tick_cpu) / max(now - self._tick_at, 1e-6))
        self._tick_at, self._tick_cpu = now, cpu
        self._due = now + TICK_S
        self._timer = loop.call_at(self._due, self._tick) if self.streams else None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
