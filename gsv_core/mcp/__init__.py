"""MCP servers' tools for the agent (docs/mcp.md): names, result mapping, one client per
server and the supervisor that keeps them running. The SDK (the `mcp` extra) is imported
only when a server starts, so the gateway works without it."""
