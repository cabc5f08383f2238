"""A TCP proxy a test can cut and restore, to stand between a client and a real server (a Redis outage).

``cut()`` closes every proxied connection and stops listening (new connections are refused, as with a
stopped server); ``restore()`` listens again on the same port. ``lose_next_reply(marker)``: the next command
containing ``marker`` reaches the server, but its reply does not come back — the proxy drops that connection
instead (a write the server applied whose reply the client never saw).
"""

from __future__ import annotations

import asyncio
import contextlib


class CutProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()
        self._lose: bytes | None = None
        self.lost_replies = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def __aenter__(self) -> CutProxy:
        await self.restore()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cut()

    def lose_next_reply(self, marker: bytes) -> None:
        self._lose = marker

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._pumps):
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        losing = asyncio.Event()  # a command whose reply is to be lost went up this connection
        for src, dst, up in ((reader, up_writer, True), (up_reader, writer, False)):
            task = asyncio.create_task(self._pump(src, dst, up, losing))
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, up: bool,
                    losing: asyncio.Event) -> None:
        try:
            while data := await src.read(65536):
                if up and self._lose is not None and self._lose in data:
                    self._lose = None
                    losing.set()
                elif not up and losing.is_set():  # the reply: dropped with the connection
                    self.lost_replies += 1
                    dst.transport.abort()
                    return
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                dst.transport.abort()
