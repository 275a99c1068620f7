"""The chat TUI's dialogs: help and the session picker."""
