"""Which setting names hold a secret, judged by the name alone: shared by the gateway
config and the CLI's local config (standard library only)."""

from __future__ import annotations

import re

# `token`, `botToken`, `api_key`, `openaiApiKey`, `appPassword`, `signingSecret`,
# `secret_access_key`; but not `maxTokens` or `reserveTokens` (counts, not credentials)
_SECRET_NAME = re.compile(r"(token|password|passwd|api[_-]?key)$|secret", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a key's name looks like a token, secret, password or API key."""
    return bool(_SECRET_NAME.search(name))
