"""The environment of a command the node runs: the node's own, less what would hand the
command gsv's credentials (the owner token, a node credential, any `GSV_*` secret) or the
LLM providers' keys the owner gave gsv. The owner's other variables stay: their tools
expect PATH, their locale and their own settings."""

from __future__ import annotations

from collections.abc import Mapping

from gsv_core.providers.registry import BUILTINS
from gsv_core.secret_names import looks_secret

# the providers' own names beyond BUILTINS' key variables (the SDKs read these too)
PROVIDER_VARIABLES = frozenset({
    *(endpoint.key_env for endpoint in BUILTINS.values()),
    "ANTHROPIC_AUTH_TOKEN", "GOOGLE_API_KEY", "OPENAI_ADMIN_KEY",
})  # fmt: skip


def without_credentials(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without gsv's credentials and the provider keys."""
    return {name: value for name, value in env.items() if not _credential(name)}


def _credential(name: str) -> bool:
    if name in PROVIDER_VARIABLES:
        return True
    # GSV_TOKEN, GSV_NODE_CREDENTIALS_<ID>, GSV_APIKEYS_ANTHROPIC ...: a GSV_ variable
    # named like a credential (not GSV_HOME, GSV_URL, GSV_NODE_LOG_MAX_BYTES)
    return name.startswith("GSV_") and (looks_secret(name) or "CREDENTIAL" in name)
