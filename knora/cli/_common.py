"""Helpers shared by the CLI commands: where a command runs (a server or in-process), running services, the
default tenant, output.

Imported by every command on its fast path: the engine (``knora.root``) is imported only by
``running_services``, when a command works in-process.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from knora.cli.client import Server
    from knora.domain.knowledge import KnowledgeBase
    from knora.root import Services
    from knora.settings import Settings


def add_mode_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in-process", action="store_true",
                        help="run in this process even when a server is running (default: talk to it)")


def choose_mode(args: argparse.Namespace) -> Server | None:
    """The server to talk to, or None to work in-process (``--in-process``, or none running); says which on
    stderr. Reads ``ClientSettings`` only: the full settings are read when the engine is built."""
    from knora.cli.client import announce, find_server
    from knora.settings import ClientSettings

    settings = ClientSettings()
    asked = bool(getattr(args, "in_process", False))
    server = None if asked else find_server(settings)
    announce(server, settings, asked=asked)
    return server


@asynccontextmanager
async def running_services(settings: Settings | None = None) -> AsyncIterator[Services]:
    from knora.root import build_services
    from knora.settings import Settings

    # The CLI never ingests the sample KB on its own: that is the server's first-start convenience.
    services = await build_services((settings or Settings()).model_copy(update={"sample_kb": False}))
    try:
        yield services
    finally:
        await services.aclose()


def announce_generated(c: Services) -> None:
    """On stderr, what the first start of this data dir generated and shows once: the owner account's
    password (``KNORA_OWNER_PASSWORD`` unset) and the default tenant's key (``KNORA_API_KEY`` unset), as
    ``knora serve`` prints them: a command that happens to be the first to open the database must not lose
    them."""
    if c.generated_owner:
        login, password = c.generated_owner
        sys.stderr.write(f"knora: owner account made (shown once, keep it): {login} / {password}\n")
    if c.generated_api_key:
        sys.stderr.write("knora: API key of the default tenant (shown once, keep it): "
                         f"{c.generated_api_key}\n")


async def audit(c: Services, tenant_id: int, action: str, target: str = "") -> None:
    """An operator's in-process change, in the tenant's audit log beside the API's entries (``actor``: the
    CLI and the system user who ran it)."""
    import getpass

    from knora.domain.access import AuditEntry

    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "?"
    await c.audit.record(AuditEntry(tenant_id=tenant_id, actor=f"cli:{who} (in-process)", action=action,
                                    target=target, status=200))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"knora: {message}\n")
    return code


async def find_kb(c: Services, name_or_id: str) -> KnowledgeBase | None:
    kb = await c.repos.kbs.get(c.default_tenant_id, name_or_id)
    if kb is None:
        kb = await c.repos.kbs.get_by_name(c.default_tenant_id, name_or_id)
    return kb


def find_kb_json(kbs: list[dict[str, Any]], name_or_id: str) -> dict[str, Any] | None:
    """The knowledge base ``GET /knowledge-bases`` lists with this id, else with this name."""
    for key in ("id", "name"):
        for kb in kbs:
            if kb.get(key) == name_or_id:
                return kb
    return None
