"""The gateway process: WebSocket server, connections, registry and method handlers."""
