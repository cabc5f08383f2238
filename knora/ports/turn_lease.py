"""Leases on running turns: which incomplete assistant messages a live process is still answering.

A process that dies (``kill -9``) leaves its turns incomplete in the database and, on a shared log, open for
followers. Another process may close them only once it knows nobody runs them: with several replicas on one
database, "older than my start" is not enough (a replica started earlier is still streaming its turns). The
owner of a turn holds a lease with a short TTL and refreshes it while the turn runs; a turn whose lease has
lapsed has no live owner.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol, runtime_checkable


@runtime_checkable
class TurnLeases(Protocol):
    ttl_seconds: float
    shared: bool  # True when other processes' leases are visible (Redis); False: this process's only

    async def hold(self, message_ids: Collection[str]) -> None:
        """Takes or refreshes the leases of turns this process runs (for ``ttl_seconds`` from now)."""
        ...

    async def release(self, message_id: str) -> None: ...

    async def held(self, message_ids: Collection[str]) -> set[str]:
        """Those of ``message_ids`` a live process holds a lease on."""
        ...

    async def claim_close(self, message_id: str) -> bool:
        """True for exactly one caller across processes (the one that closes an abandoned turn)."""
        ...

    async def close(self) -> None: ...
