"""The chat TUI's widgets: the conversation, its messages, the composer, status lines."""
