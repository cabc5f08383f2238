"""How long a turn may hold answer/reasoning text before it goes to the stream log as one event.

Every stream-log entry costs the process the same again for each follower (wake-up, SSE frame, socket write) and,
on Redis, a round trip — while a model delta is a few characters. One process streaming to many clients at once
therefore runs out of CPU on events, not on text. The pacer sets a per-process **frame budget** (text events per
second, all streams together): with ``n`` streams writing text, each may append at most once per ``n / budget``
seconds (capped at ``max_hold_s``); deltas that arrive sooner are merged into the next event.

Below the budget the hold is shorter than the gap between two model deltas, so nothing is merged and every delta
is appended the moment it arrives (the first delta of a turn, and the first one after a pause, always are). Under
load the hold grows with the number of streams, which is exactly when a process would otherwise fall behind and
deliver the same text late instead of merged. Text is never dropped or reordered: a held delta is released by the
next delta after the hold, by a timer when the model pauses, and before any other event of the turn (a tool call,
the ``done`` mark, stop, the end of the turn).
"""

from __future__ import annotations


class DeltaPacer:
    """Shared by every turn of a process; a handler registers while it is writing text."""

    def __init__(self, frame_budget: int = 10_000, max_hold_s: float = 0.1) -> None:
        if frame_budget < 0 or max_hold_s < 0:
            raise ValueError("frame_budget and max_hold_s must not be negative")
        self.frame_budget = frame_budget
        self.max_hold_s = max_hold_s
        self.streams = 0  # turns that have started writing text and not ended
        self._hold = 0.0

    def _update(self) -> None:
        self._hold = 0.0 if not self.frame_budget else min(self.max_hold_s, self.streams / self.frame_budget)

    def enter(self) -> None:
        self.streams += 1
        self._update()

    def leave(self) -> None:
        self.streams = max(0, self.streams - 1)
        self._update()

    @property
    def hold(self) -> float:
        """Seconds a stream waits after a text append before the next one (0: append every delta at once)."""
        return self._hold
