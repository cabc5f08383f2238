"""MCP client side: connect to configured MCP services with the official SDK and wrap their tools as Tools."""
