"""The ingestion work running in this process, by document, so that a delete or a re-parse can stop it.

Stopping cancels the work's task; a parse in a worker process is then killed (``DocumentParsers``), so a
document being parsed (a 5,000-page PDF, 50 MB of XML) is deleted at once instead of after the whole parse.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(frozen=True)
class _Work:
    kb_id: str
    task: asyncio.Task[None]


class RunningWork:
    def __init__(self) -> None:
        self._by_document: dict[str, _Work] = {}

    async def run(self, knowledge_id: str, kb_id: str, task: asyncio.Task[None]) -> bool:
        """Awaits ``task``; False if it was stopped (``stop``). Cancelling the caller cancels the task too."""
        work = _Work(kb_id, task)
        self._by_document[knowledge_id] = work
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:  # the caller is being cancelled (the queue stops): so is the work
            task.cancel()
            await asyncio.wait([task])
            raise
        finally:
            if self._by_document.get(knowledge_id) is work:
                del self._by_document[knowledge_id]
        if task.cancelled():
            return False
        task.result()
        return True

    async def stop(self, knowledge_id: str) -> None:
        work = self._by_document.get(knowledge_id)
        if work is not None and not work.task.done():
            work.task.cancel()
            await asyncio.wait([work.task])

    async def stop_knowledge_base(self, kb_id: str) -> None:
        for kid in [kid for kid, work in self._by_document.items() if work.kb_id == kb_id]:
            await self.stop(kid)
