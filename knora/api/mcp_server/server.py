"""``build_server(lifespan)``: the MCP server definition both transports serve.

The lifespan decides where the services come from: ``knora mcp`` builds them once the stdio transport owns
stdin/stdout; the HTTP app hands over the services it already runs. Tool names are plain verbs a model can
tell apart; the descriptions (the functions' docstrings) say when to use which.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from knora import __version__
from knora.api.mcp_server import tools
from knora.api.mcp_server.state import McpState

INSTRUCTIONS = (
    "Knora holds this team's knowledge bases (documents split into chunks). Start with "
    "list_knowledge_bases when you do not know their names. Use `ask` for a cited answer to a question, "
    "`search_knowledge` for the raw matching passages, list_documents / read_document to browse and read, "
    "and add_document to store new text or a web page. Documents are also resources: knora://knowledge/{id}.")

RESOURCE_TEMPLATE = "knora://knowledge/{knowledge_id}"

Lifespan = Callable[[MCPServer[McpState]], AbstractAsyncContextManager[McpState]]

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                        open_world_hint=False)
_CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                           open_world_hint=False)
# (tool, title, hints); ``ask`` is not read-only: its turn is kept as a chat session, as the web UI's are.
TOOLS: tuple[tuple[Callable[..., Awaitable[object]], str, ToolAnnotations], ...] = (
    (tools.list_knowledge_bases, "List knowledge bases", _READ),
    (tools.search_knowledge, "Search knowledge bases", _READ),
    (tools.ask, "Ask (cited answer)", _CHANGES),
    (tools.list_documents, "List documents", _READ),
    (tools.read_document, "Read a document", _READ),
    (tools.add_document, "Add a document", _CHANGES.model_copy(update={"open_world_hint": True})),
)


def build_server(lifespan: Lifespan) -> MCPServer[McpState]:
    server: MCPServer[McpState] = MCPServer(
        "knora", title="Knora knowledge bases", instructions=INSTRUCTIONS, version=__version__,
        lifespan=lifespan, log_level="WARNING")
    for fn, title, hints in TOOLS:
        server.add_tool(fn, title=title, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints)
    server.resource(RESOURCE_TEMPLATE, name="knowledge", title="A document's text", mime_type="text/markdown",
                    description="The text of one document (by its id, from list_documents or "
                                "search_knowledge), assembled from its chunks.")(tools.knowledge_resource)
    return server
