"""Parsing in worker processes that can be capped and killed (issue 20, 4e): the default ``DocumentParsers``.

A parser library handed a hostile file (a zip bomb, 50 MB of XML, 5,000 pages sharing one huge content stream)
can take gigabytes or hours, and a thread cannot be stopped. So each document is parsed in a worker process
whose address space is capped (``RLIMIT_AS``, set by the child itself) and which is killed when its document
runs past the time limit, when its parse is cancelled (the document was deleted or re-parsed) or when the pool
closes. Workers are fresh interpreters (no copy of the server's threads and sockets), kept warm between
documents, and replaced after a kill. Waiting for a worker costs no thread: the pipe is watched by the event
loop; only reading a finished result off the pipe runs in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection

from knora.adapters.parsers.registry import supported_extensions
from knora.adapters.parsers.worker import DEFAULT_ENTRY
from knora.ports.parser import ParsedDocument, ParseError, ParseLimits, ParseOptions

_STARTUP_SECONDS = 120.0  # importing the parsing libraries on a busy machine; not charged to a document


class _Stopped(Exception):
    """The worker had to be killed; ``reason`` is what the user reads."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Worker:
    def __init__(self, process: subprocess.Popen[bytes], conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.pid = process.pid
        self.ended = False
        self.exitcode: int | None = None

    async def receive(self, timeout: float | None) -> tuple[str, object]:
        """The next message; TimeoutError past ``timeout``; EOFError when the child is gone."""
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()
        fd = self.conn.fileno()
        loop.add_reader(fd, _set_once, readable)
        try:
            async with asyncio.timeout(timeout):
                await readable
        finally:
            loop.remove_reader(fd)
            os.set_blocking(fd, True)  # uvloop's add_reader leaves the socket non-blocking; send/recv block
        message: tuple[str, object] = await asyncio.to_thread(self.conn.recv)
        return message

    async def kill(self) -> None:
        """SIGKILL, reaped before our end of the socket is closed: a thread still reading it sees the end of
        the stream first, never a closed (and perhaps reused) descriptor."""
        if self.ended:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        await self._end(close_first=False)

    async def wait(self) -> None:
        """Closes our end of the socket (an idle worker then leaves its loop) and reaps the process."""
        if not self.ended:
            await self._end(close_first=True)

    async def _end(self, *, close_first: bool) -> None:
        self.ended = True
        if close_first:
            self.conn.close()
        try:
            await asyncio.to_thread(self.process.wait, 10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            await asyncio.to_thread(self.process.wait)
        finally:
            self.conn.close()
        self.exitcode = self.process.returncode

    def exit_reason(self) -> str:
        code = self.exitcode
        if code is None:
            return "the parser process stopped answering"
        if code < 0:
            return f"the parser process was killed by signal {-code}"
        return f"the parser process exited with code {code}"


class ProcessParsers:
    """``DocumentParsers`` over up to ``workers`` warm worker processes. ``entry`` ("module:function", called
    as ``fn(data, file_name, max_expanded_bytes, options)`` in the child) is the parse to run; tests name
    their own."""

    def __init__(self, limits: ParseLimits, *, workers: int = 2, entry: str = DEFAULT_ENTRY) -> None:
        self.limits = limits
        self._entry = entry
        self._slots = asyncio.Semaphore(max(1, workers))
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False

    @property
    def extensions(self) -> frozenset[str]:
        return supported_extensions()

    def worker_pids(self) -> list[int]:
        """Live worker processes (for tests and diagnostics)."""
        return [w.pid for w in [*self._idle, *self._busy] if w.pid is not None]

    async def parse(self, data: bytes, file_name: str,
                    options: ParseOptions | None = None) -> ParsedDocument:
        opts = (options or ParseOptions()).model_dump()
        async with self._slots:
            if self._closed:
                raise ParseError("the server is shutting down; the document will be parsed after a restart")
            worker = self._idle.pop() if self._idle else await self._start()
            self._busy.add(worker)
            keep = False
            try:
                kind, body = await self._run(worker, data, file_name, opts)
                keep = kind != "memory"
            except _Stopped as stopped:
                raise ParseError(stopped.reason) from None
            finally:
                self._busy.discard(worker)
                if keep and not self._closed:
                    self._idle.append(worker)
                else:  # timed out, out of memory, died, or cancelled: never reused
                    await asyncio.shield(worker.kill())
            if kind == "ok" and isinstance(body, dict):
                return ParsedDocument.model_validate(body)
            if kind == "memory":
                raise ParseError(f"stopped: parsing needed more than {self.limits.memory_mb} MB of memory "
                                 "(parse_memory_limit_mb); the file is too large or too complex to index")
            raise ParseError(str(body))

    async def _run(self, worker: _Worker, data: bytes, file_name: str,
                   options: dict[str, object]) -> tuple[str, object]:
        timeout = self.limits.timeout_seconds or None
        try:
            async with asyncio.timeout(timeout):
                await asyncio.to_thread(worker.conn.send, (data, file_name, options))
                kind, body = await worker.receive(None)
        except TimeoutError:
            raise _Stopped(f"stopped: parsing took longer than {self.limits.timeout_seconds:g} s "
                           "(parse_timeout_seconds); the file is too large or too complex to index") from None
        except (EOFError, OSError, BrokenPipeError):
            await worker.kill()
            raise _Stopped(f"stopped: {worker.exit_reason()} while reading the file (out of memory? "
                           f"parse_memory_limit_mb is {self.limits.memory_mb})") from None
        return kind, body

    async def _start(self) -> _Worker:
        parent, child = socket.socketpair()
        # A fresh interpreter (``python -m``), not multiprocessing's spawn: spawn re-imports the parent's
        # ``__main__``, which breaks any embedding script without a main guard. The child gets this process's
        # import path. Started from the event loop's thread on purpose: the child's parent-death signal is
        # tied to the thread that forked it, and a worker thread of to_thread may end before the child does.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        with child:
            process = subprocess.Popen(
                [sys.executable, "-m", "knora.adapters.parsers.worker", str(child.fileno()), str(os.getpid()),
                 str(self.limits.memory_mb), str(self.limits.max_expanded_bytes), self._entry,
                 str(self.limits.nice)],
                pass_fds=(child.fileno(),), env=env, stdin=subprocess.DEVNULL)
        worker = _Worker(process, Connection(parent.detach()))
        try:
            kind, _pid = await worker.receive(_STARTUP_SECONDS)
            if kind != "ready":
                raise EOFError
        except (TimeoutError, EOFError, OSError) as exc:
            await worker.kill()
            raise ParseError(f"could not start a parser process ({worker.exit_reason()})") from exc
        except BaseException:
            await asyncio.shield(worker.kill())
            raise
        return worker

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for worker in idle:  # closing the pipe ends an idle worker's loop
            await worker.wait()
        for worker in list(self._busy):  # its parse sees the pipe close, ends in ParseError and reaps it
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
