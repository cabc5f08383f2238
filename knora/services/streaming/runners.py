"""The turn runners by kind: ``quick`` (the quick-answer pipeline) and ``smart`` (the ReAct agent).

The chat service looks a runner up at the start of each turn, so a runner can be replaced on a running process
(tests script one; an embedding application may plug its own) without rebuilding the services around it.
"""

from __future__ import annotations

from dataclasses import dataclass

from knora.ports.turn import TurnRunner


@dataclass
class TurnRunners:
    quick: TurnRunner | None = None
    smart: TurnRunner | None = None

    def get(self, kind: str) -> TurnRunner | None:
        """``"smart"`` → the agent runner; anything else → the quick-answer runner."""
        return self.smart if kind == "smart" else self.quick
