"""Parsing in a thread of this process: the zip budget holds, but memory and time do not (a thread can be
neither capped nor stopped). For hosts where a worker process cannot be started; the default is ``pool``."""

from __future__ import annotations

import asyncio

from knora.adapters.parsers.registry import parse_bytes, supported_extensions
from knora.ports.parser import ParsedDocument, ParseLimits, ParseOptions


class ThreadParsers:
    def __init__(self, limits: ParseLimits, *, workers: int = 2) -> None:
        self.limits = limits
        self._slots = asyncio.Semaphore(max(1, workers))

    @property
    def extensions(self) -> frozenset[str]:
        return supported_extensions()

    async def parse(self, data: bytes, file_name: str,
                    options: ParseOptions | None = None) -> ParsedDocument:
        async with self._slots:
            return await asyncio.to_thread(parse_bytes, data, file_name,
                                           max_expanded_bytes=self.limits.max_expanded_bytes, options=options)

    async def aclose(self) -> None:
        return None
