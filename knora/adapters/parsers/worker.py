"""The parser worker process (child side of ``pool.py``): caps its own memory, then parses documents sent
over a socket (a multiprocessing ``Connection`` on the fd it was started with), one at a time, until it
closes.

Messages. Parent → child: ``(data, file_name, options)`` (options as ``ParseOptions.model_dump()``). Child →
parent: ``("ready", pid)`` once, after the limit is set and the parse function is imported (so starting is
not charged to the first document's time limit); then per document ``("ok", ParsedDocument dump)``,
``("error", reason)`` or ``("memory", reason)``. After ``memory`` the child exits: a process that ran out
of address space may hold half-built state.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import resource
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection

from knora.ports.parser import ParsedDocument, ParseError, ParseOptions

ParseFunction = Callable[[bytes, str, int, ParseOptions], ParsedDocument]
DEFAULT_ENTRY = "knora.adapters.parsers.worker:parse_document"
_PR_SET_PDEATHSIG = 1


def parse_document(data: bytes, file_name: str, max_expanded_bytes: int,
                   options: ParseOptions) -> ParsedDocument:
    from knora.adapters.parsers.registry import parse_bytes

    return parse_bytes(data, file_name, max_expanded_bytes=max_expanded_bytes, options=options)


def _die_with_parent(parent_pid: int) -> None:
    """A worker must not outlive a server killed with SIGKILL (it would go on burning a core on a bomb)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)


def _resolve(entry: str) -> ParseFunction:
    module, _, attr = entry.partition(":")
    fn: ParseFunction = getattr(importlib.import_module(module), attr)
    return fn


def _out_of_memory(exc: BaseException) -> bool:
    """lxml reports a failed allocation as a syntax error; parse_bytes wraps MemoryError in ParseError."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MemoryError) or "Memory allocation failed" in str(seen):
            return True
        seen = seen.__cause__
    return False


def serve(conn: Connection, parent_pid: int, memory_mb: int, max_expanded_bytes: int, entry: str,
          nice: int = 0) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops its workers
    _die_with_parent(parent_pid)
    if nice > 0:  # background work: an OCR'd scan or a huge file must not take chat's CPU
        os.nice(nice)
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # The parsing libraries are imported by the first document that needs one (up to a second): preloading
    # them all would double a worker's start, which every new server (and every test) pays.
    parse = _resolve(entry)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            data, file_name, options = conn.recv()
        except (EOFError, OSError):
            return
        reply: tuple[str, object]
        try:
            opts = ParseOptions.model_validate(options)
            reply = ("ok", parse(data, file_name, max_expanded_bytes, opts).model_dump())
        except BaseException as exc:  # noqa: BLE001 - every failure becomes a reason for the parent
            if _out_of_memory(exc):
                reply = ("memory", "")
            elif isinstance(exc, ParseError):
                reply = ("error", str(exc))
            else:
                reply = ("error", f"could not parse {file_name!r}: {type(exc).__name__}: {exc}")
        del data
        try:
            conn.send(reply)
        except MemoryError:
            conn.send(("memory", ""))
        if reply[0] == "memory":
            return


def main(argv: list[str]) -> None:
    fd, parent_pid, memory_mb, max_expanded_bytes, entry, *rest = argv
    serve(Connection(int(fd)), int(parent_pid), int(memory_mb), int(max_expanded_bytes), entry,
          int(rest[0]) if rest else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
