"""``knora mcp``: Knora's MCP server on stdin/stdout, for a desktop assistant or an IDE agent that starts it.

It serves the configured data dir / database in-process (next to a running ``knora serve``, as every command
does) for the default tenant, or for the tenant whose key ``--api-key`` names. The services are built only
once the SDK's stdio transport owns stdin/stdout, which it points at stderr for everyone else: a stray print,
a log line or a parse worker's output can never corrupt the frames. Logs go to stderr.
Registered by ``knora.cli.main`` through ``register(subparsers)``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "mcp", help="serve the knowledge bases as an MCP server on stdin/stdout")
    p.add_argument("--api-key", metavar="KEY", default=None,
                   help="act as the tenant of this API key (default: the default tenant)")
    p.set_defaults(handler=run)


class UnknownKey(Exception):
    pass


async def run(args: argparse.Namespace) -> int:
    from mcp.server.mcpserver import MCPServer

    from knora.api.mcp_server.server import build_server
    from knora.api.mcp_server.state import Caller, McpState
    from knora.cli._common import fail, running_services
    from knora.settings import Settings

    settings = Settings()
    logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper(),
                        format="%(levelname)s %(name)s: %(message)s")

    @asynccontextmanager
    async def lifespan(_: MCPServer[McpState]) -> AsyncIterator[McpState]:
        async with running_services(settings) as c:
            if c.generated_api_key:
                print(f"knora: API key of the default tenant (shown once, keep it): {c.generated_api_key}",
                      file=sys.stderr, flush=True)
            caller = Caller(tenant_id=c.default_tenant_id)  # the operator on this machine: an owner
            if args.api_key:
                grant = await c.tenants.grant(args.api_key)
                if grant is None:
                    raise UnknownKey("--api-key is not a key of any tenant")
                caller = Caller(tenant_id=grant.tenant_id, role=grant.role)  # the key's tenant and role
            yield McpState(services=c, caller=caller)

    try:
        await build_server(lifespan).run_stdio_async()
    except UnknownKey as exc:
        return fail(str(exc), 2)
    except BaseExceptionGroup as group:  # raised inside the transport's task group
        unknown, _rest = group.split(UnknownKey)
        if unknown is None:
            raise
        return fail(str(unknown.exceptions[0]), 2)
    return 0
