"""Knora's own MCP server: the tenant's knowledge as MCP tools and resources, through the official SDK.

One server definition (``server.build_server``) is shared by both transports: ``knora mcp`` serves it on
stdin/stdout (``knora/cli/mcp.py``), ``/mcp`` on the running HTTP server as Streamable HTTP (``http.py``).
Tools call services only. See docs/mcp-server.md.
"""
