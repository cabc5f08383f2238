"""``build_server(lifespan)``: the MCP server definition both transports serve.

The lifespan decides where the services come from: ``knora mcp`` builds them once the stdio transport owns
stdin/stdout; the HTTP app hands over the services it already runs. Tool names are plain verbs a model can
tell apart; the descriptions (the functions' docstrings) say when to use which.
"""

from __future__ import annotations

from collections.abc import Callable
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


def build_server(lifespan: Lifespan) -> MCPServer[McpState]:
    server: MCPServer[McpState] = MCPServer(
        "knora", title="Knora knowledge bases", instructions=INSTRUCTIONS, version=__version__,
        lifespan=lifespan, log_level="WARNING")
    server.add_tool(tools.list_knowledge_bases, title="List knowledge bases", annotations=_READ)
    server.add_tool(tools.search_knowledge, title="Search knowledge bases", annotations=_READ)
    # not read-only: the turn is kept as a chat session, as the web UI's turns are
    server.add_tool(tools.ask, title="Ask (cited answer)",
                    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                idempotent_hint=False, open_world_hint=False))
    server.add_tool(tools.list_documents, title="List documents", annotations=_READ)
    server.add_tool(tools.read_document, title="Read a document", annotations=_READ)
    server.add_tool(tools.add_document, title="Add a document",
                    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                idempotent_hint=False, open_world_hint=True))
    server.resource(RESOURCE_TEMPLATE, name="knowledge", title="A document's text", mime_type="text/markdown",
                    description="The text of one document (by its id, from list_documents or "
                                "search_knowledge), assembled from its chunks.")(tools.knowledge_resource)
    return server
