"""Placeholder being written (see helper task)."""


def init() -> None:
    """Write the local config."""
