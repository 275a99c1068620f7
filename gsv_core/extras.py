"""Optional features whose library is a pip extra (messenger SDKs, the MCP SDK): what to
tell a person when one is missing, instead of a traceback."""

from __future__ import annotations

# the pip extra that brings each feature's library
EXTRAS = {"telegram": "telegram", "discord": "discord", "slack": "slack", "mcp": "mcp"}
# how a message names a feature that is no messenger channel
_LABELS = {"mcp": "MCP support"}


def missing_extra(feature: str, exc: ModuleNotFoundError) -> str:
    """What to install when a feature's library is missing."""
    label = _LABELS.get(feature, f"the {feature} channel")
    extra = EXTRAS.get(feature)
    if extra is None:
        return f"{feature} cannot start: the Python module {exc.name!r} is missing"
    return (
        f"{label} needs its extra: pip install 'gsv[{extra}]' "
        f"(module {exc.name!r} is missing), then restart the gateway"
    )
