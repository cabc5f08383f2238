"""Large lists are emptied a piece at a time, with the event loop running between pieces."""

from __future__ import annotations

import asyncio

import pytest

from knora.services.ingest.release import drop_gradually

pytestmark = pytest.mark.unit


async def test_lists_are_emptied_in_pieces_while_other_tasks_run() -> None:
    records = [object() for _ in range(10_000)]
    shared = list(records)
    seen: list[int] = []

    async def watcher() -> None:
        while records:
            seen.append(len(records))
            await asyncio.sleep(0)

    task = asyncio.create_task(watcher())
    await asyncio.sleep(0)
    await drop_gradually(shared, records, piece=1000)
    await task
    assert (shared, records) == ([], [])
    assert len(set(seen)) > 5  # the watcher ran between the pieces of the owning list
    await drop_gradually([], piece=1000)  # nothing to do is fine
