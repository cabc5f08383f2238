"""``knora``: one program for serving, managing knowledge bases and ingesting documents.

Each sub-command lives in its own module (``knora/cli/<area>.py`` exposing ``register(subparsers)``), listed
in ``COMMANDS``. ``kb``, ``search``, ``ask`` and ``ingest`` talk to the running server's HTTP API when there
is one (``knora.cli.client``), else build the services in-process on the configured data dir
(``knora/root.py``; SQLite WAL lets that run next to a server too); so does ``key``. ``serve``,
``mcp``, ``eval``, ``secrets``, ``blobs``, ``user`` and ``tenant`` always run in-process (``user`` and
``tenant`` are the operator's: see their modules). The command modules import the engine only inside their
handlers, so a command that talks to a server starts in a fraction of a second (docs/cli.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from knora.cli import ask, blobs, ingest, kb, keys, mcp, search, secrets, serve, tenants, users
from knora.cli import eval as eval_command

T = TypeVar("T")

COMMANDS = (serve, kb, ingest, search, ask, mcp, eval_command, secrets, blobs, users, tenants, keys)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="knora",
                                     description="Cited, streamed answers over your own documents.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Runs a command on uvloop when it is installed (a dependency off Windows): ``knora serve`` runs uvicorn
    with ``Server.serve()`` on the loop it is given, so the loop is chosen here — about 1.6x less CPU per
    streamed event than asyncio's own loop (docs/streaming.md)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    handler = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
        if asyncio.iscoroutine(result):
            result = run(result)
    except KeyboardInterrupt:
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
