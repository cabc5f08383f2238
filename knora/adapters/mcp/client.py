"""One MCP service, reached with the official ``mcp`` SDK over Streamable HTTP, SSE or (if enabled) stdio.

Each operation opens its own short session: tool calls are rare next to model calls, and a fresh connection
per call means a server restart or a dropped stream never leaves a run holding a dead session.

An HTTP service's URL was stored by a tenant, so it is checked against the outbound policy before connecting
(a service saved before the policy, pointing at loopback or 169.254.169.254, fails with that reason) and every
connection the SDK makes goes through the policy's pinned ``httpx2`` transport (no second DNS answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from knora.domain.mcp import MCPService
from knora.netguard import PUBLIC_ONLY, AddressRefused, OutboundPolicy


class MCPUnavailable(Exception):
    """The service could not be reached or spoke something that is not MCP."""


@dataclass(frozen=True)
class ServerDescription:
    """A server's self-description from its initialize answer, and its tools (the SDK's ``Tool`` objects)."""

    name: str
    version: str
    description: str
    instructions: str
    tools: list[Any]


def auth_headers(service: MCPService) -> dict[str, str]:
    headers = {str(k): str(v) for k, v in (service.headers or {}).items()}
    auth = service.auth_config or {}
    if auth.get("token"):
        headers.setdefault("Authorization", f"Bearer {auth['token']}")
    if auth.get("api_key"):
        headers.setdefault("X-API-Key", str(auth["api_key"]))
    return headers


def pinned_factory(policy: OutboundPolicy) -> McpClientFactory:
    """An ``httpx2`` client factory (the SDK's ``McpHttpClientFactory`` shape) whose clients connect through
    the policy's pinned transport, with the SDK's default timeouts."""

    def make(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
             auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers, auth=auth, transport=policy.transport2(),
            timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))

    return make


McpClientFactory = Callable[..., httpx2.AsyncClient]


class MCPClient:
    def __init__(self, service: MCPService, *, stdio_enabled: bool = False,
                 timeout: float | None = None, policy: OutboundPolicy = PUBLIC_ONLY) -> None:
        """``policy``: where the service's URL may point (the toolset passes the tenant policy)."""
        self.service = service
        self.stdio_enabled = stdio_enabled
        self.policy = policy
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
            if self.transport in ("http-streamable", "sse"):
                try:
                    await self.policy.check_url(self.service.url)
                except AddressRefused as exc:
                    raise MCPUnavailable(f"MCP service {self.service.name} cannot be used: {exc}") from exc
            factory = pinned_factory(self.policy)
            if self.transport == "http-streamable":
                http = await stack.enter_async_context(factory(
                    headers=auth_headers(self.service),
                    timeout=httpx2.Timeout(self.timeout, read=max(self.timeout, 60.0))))
                transport = streamable_http_client(self.service.url, http_client=http)
            elif self.transport == "sse":
                transport = sse_client(self.service.url, headers=auth_headers(self.service),
                                       timeout=self.timeout, httpx_client_factory=factory)
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

    @contextlib.contextmanager
    def _failures(self, what: str) -> Iterator[None]:
        """Any failure inside (but cancellation) as ``MCPUnavailable`` saying ``what`` failed."""
        try:
            yield
        except MCPUnavailable:
            raise
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                raise
            raise MCPUnavailable(f"{what} failed: {_describe(exc)}") from exc

    async def list_tools(self) -> list[Any]:
        with self._failures(f"MCP service {self.service.name}: listing tools"):
            async with self.session() as client:
                async with asyncio.timeout(self.timeout):
                    result = await client.list_tools()
                return list(result.tools)

    async def describe(self) -> ServerDescription:
        """What the server says of itself when a session opens (name, version, description, instructions)
        and its tools, in one session."""
        with self._failures(f"MCP service {self.service.name}: describing itself"):
            async with self.session() as client:
                async with asyncio.timeout(self.timeout):
                    result = await client.list_tools()
                info = client.server_info
                return ServerDescription(
                    name=info.name if info else "", version=info.version if info else "",
                    description=(info.description or "") if info else "",
                    instructions=client.instructions or "", tools=list(result.tools))

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        with self._failures(f"MCP call {name} on {self.service.name}"):
            async with self.session() as client:
                async with asyncio.timeout(self.timeout):
                    return await client.call_tool(name, arguments)

def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
