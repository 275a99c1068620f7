"""Messenger channels: the Channel protocol, the manager, the inbound pipeline and the adapters."""
