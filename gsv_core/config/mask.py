"""What a config read shows: every secret replaced by "***", and a masked value written
back keeping the secret it masks. Secrets are keys named like secrets (and every
`apiKeys.*`), MCP servers' `env` and `headers` values and what carries a credential in
their `args`, and the user part and query of any URL."""

from __future__ import annotations

from typing import Any

from gsv_core.config.mcp import is_mcp_args
from gsv_core.config.mcp import is_mcp_opaque
from gsv_core.config.mcp import looks_mcp_secret
from gsv_core.config.mcp import mask_args
from gsv_core.secret_names import looks_secret
from gsv_core.secret_names import mask_url_credentials

MASK = "***"


def is_secret_key(name: str, parent: str | None = None) -> bool:
    """Whether a config key holds a secret: every `apiKeys.*` value, any key whose name
    looks like a token, secret, password or API key, and MCP servers' credentials."""
    return parent == "apiKeys" or looks_secret(name) or looks_mcp_secret(name, parent)


def mask_secrets(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of the whole config with every secret replaced by "***": keys named like
    secrets (everything under one, when it is a section), every MCP server's `env` and
    `headers` value and what carries a credential in its `args` (`mask_args`), and the
    user part and query of any URL. A read by path reads this copy."""
    masked: dict[str, Any] = _mask(config, (), None, None)
    return masked


def _mask(value: Any, path: tuple[str, ...], name: str | None, parent: str | None) -> Any:
    secret = (name is not None and is_secret_key(name, parent)) or is_mcp_opaque(path)
    if secret and value is not None:
        return _mask_all(value)
    if isinstance(value, dict):
        return {k: _mask(v, (*path, k), k, name) for k, v in value.items()}
    if isinstance(value, list) and is_mcp_args(path):
        return mask_args(value, MASK)
    if isinstance(value, list):
        return [_mask(v, (*path, str(i)), None, name) for i, v in enumerate(value)]
    return mask_url_credentials(value) if isinstance(value, str) else value


def keep_masked(new: Any, current: Any, path: tuple[str, ...]) -> Any:
    """`new` with each part that reads exactly as the current value's masked form
    ("***", `https://***@host`) put back to the current value: a config read, edited
    elsewhere and written back does not store the mask over the secret."""
    name, parent = (path[-1] if path else None), (path[-2] if len(path) > 1 else None)
    if new != current and new == _mask(current, path, name, parent):
        return current
    if isinstance(new, dict) and isinstance(current, dict):
        return {k: keep_masked(v, current[k], (*path, k)) if k in current else v
                for k, v in new.items()}  # fmt: skip
    if isinstance(new, list) and isinstance(current, list) and is_mcp_args(path):
        shown = mask_args(current, MASK)  # an arg's mask depends on the one before it
        return [current[i] if i < len(current) and v == shown[i] != current[i] else v
                for i, v in enumerate(new)]  # fmt: skip
    if isinstance(new, list) and isinstance(current, list) and name and is_secret_key(name, parent):
        # a key pool: each "***" stands for the key it masks at that place
        return [current[i] if v == MASK and i < len(current) else v for i, v in enumerate(new)]
    if isinstance(new, list) and isinstance(current, list):
        return [keep_masked(v, current[i], (*path, str(i))) if i < len(current) else v
                for i, v in enumerate(new)]  # fmt: skip
    return new


def _mask_all(value: Any) -> Any:
    """Every leaf masked: a section under a secret's name is secret all through
    (`channels.x.secrets = {bot: ...}`)."""
    if isinstance(value, dict):
        return {k: _mask_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_all(v) for v in value]
    return None if value is None else MASK
