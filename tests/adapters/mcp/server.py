"""A real MCP server (the SDK's MCPServer over Streamable HTTP) on 127.0.0.1, run in a thread for tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer


def build_server() -> tuple[MCPServer, dict[str, Any]]:
    state: dict[str, Any] = {"deleted": 0}
    server = MCPServer("test-tools")

    @server.tool(description="Add two integers")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Always fails")
    def explode(reason: str) -> str:
        raise ValueError(f"exploded: {reason}")

    @server.tool(name="delete-all", description="Deletes every record (dangerous)")
    def delete_all(table: str) -> str:
        state["deleted"] += 1
        return f"deleted {table}"

    return server, state


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(app: Any) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        if time.monotonic() > deadline:
            raise RuntimeError("MCP test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(5)


@contextmanager
def mcp_server() -> Iterator[tuple[str, dict[str, Any]]]:
    server, state = build_server()
    with running(server.streamable_http_app()) as root:
        yield f"{root}/mcp", state


@contextmanager
def mcp_sse_server() -> Iterator[tuple[str, dict[str, Any]]]:
    server, state = build_server()
    with running(server.sse_app()) as root:
        yield f"{root}/sse", state
