"""The node side: the daemon that connects to a gateway and the tools it exposes."""
