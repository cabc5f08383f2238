"""One MCP service, reached with the official ``mcp`` SDK over Streamable HTTP, SSE or (if enabled) stdio.

Each operation opens its own short session: tool calls are rare next to model calls, and a fresh connection
per call means a server restart or a dropped stream never leaves a run holding a dead session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from knora.domain.mcp import MCPService


class MCPUnavailable(Exception):
    """The service could not be reached or spoke something that is not MCP."""


def auth_headers(service: MCPService) -> dict[str, str]:
    headers = {str(k): str(v) for k, v in (service.headers or {}).items()}
    auth = service.auth_config or {}
    if auth.get("token"):
        headers.setdefault("Authorization", f"Bearer {auth['token']}")
    if auth.get("api_key"):
        headers.setdefault("X-API-Key", str(auth["api_key"]))
    return headers


class MCPClient:
    def __init__(self, service: MCPService, *, stdio_enabled: bool = False,
                 timeout: float | None = None) -> None:
        self.service = service
        self.stdio_enabled = stdio_enabled
        adv = service.advanced_config or {}
        self.timeout = float(timeout or adv.get("timeout") or 30.0)

    @property
    def transport(self) -> str:
        t = (self.service.transport_type or "sse").lower().replace("_", "-")
        return "http-streamable" if t in ("http-streamable", "streamable-http", "http", "streamable") else t

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[Client]:
        async with contextlib.AsyncExitStack() as stack:
            transport: Any
            if self.transport == "http-streamable":
                http = await stack.enter_async_context(create_mcp_http_client(
                    headers=auth_headers(self.service),
                    timeout=httpx2.Timeout(self.timeout, read=max(self.timeout, 60.0))))
                transport = streamable_http_client(self.service.url, http_client=http)
            elif self.transport == "sse":
                transport = sse_client(self.service.url, headers=auth_headers(self.service),
                                       timeout=self.timeout)
            elif self.transport == "stdio":
                if not self.stdio_enabled:
                    raise MCPUnavailable("stdio MCP services are disabled on this server "
                                         "(settings.mcp_stdio_enabled)")
                cfg = self.service.stdio_config or {}
                transport = StdioServerParameters(command=str(cfg.get("command", "")),
                                                  args=[str(a) for a in cfg.get("args") or []],
                                                  env={str(k): str(v) for k,
                                                       v in (self.service.env_vars or {}).items()}
                                                  or None)
            else:
                raise MCPUnavailable(f"unknown MCP transport: {self.service.transport_type}")
            try:
                # same task: the SDK's cancel scopes must not hop tasks
                async with asyncio.timeout(self.timeout):
                    client = await stack.enter_async_context(
                        Client(transport, cache=None, read_timeout_seconds=self.timeout))
            except MCPUnavailable:
                raise
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                    raise
                raise MCPUnavailable(f"cannot connect to MCP service {self.service.name}: "
                                     f"{_describe(exc)}") from exc
            yield client

    async def list_tools(self) -> list[Any]:
        try:
            async with self.session() as client:
                async with asyncio.timeout(self.timeout):
                    result = await client.list_tools()
                return list(result.tools)
        except MCPUnavailable:
            raise
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                raise
            raise MCPUnavailable(f"MCP service {self.service.name} failed to list tools: "
                                 f"{_describe(exc)}") from exc

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        try:
            async with self.session() as client:
                async with asyncio.timeout(self.timeout):
                    return await client.call_tool(name, arguments)
        except MCPUnavailable:
            raise
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                raise
            raise MCPUnavailable(f"MCP call {name} on {self.service.name} failed: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
