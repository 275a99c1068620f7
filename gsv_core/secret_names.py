"""Which setting names hold a secret, judged by the name alone, and the credentials a URL
carries in its user part or query: shared by the gateway config and the CLI's local
config (standard library only)."""

from __future__ import annotations

import re

# `token`, `botToken`, `api_key`, `openaiApiKey`, `appPassword`, `signingSecret`,
# `secret_access_key`; but not `maxTokens` or `reserveTokens` (counts, not credentials)
_SECRET_NAME = re.compile(r"(token|password|passwd|api[_-]?key)$|secret", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a key's name looks like a token, secret, password or API key."""
    return bool(_SECRET_NAME.search(name))


# `scheme://user:password@` anywhere in a text; a URL's query and fragment
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]*@")
_URL = re.compile(r"(?i)[a-z][a-z0-9+.-]*://\S*")
_QUERY = re.compile(r"([?#])[^#\s]*")


def mask_url_credentials(text: str, mask: str = "***") -> str:
    """`text` with every URL's user part and query (and fragment) masked:
    `https://u:pw@h/x?key=1` reads `https://***@h/x?***` (a token rides in either)."""
    if "://" not in text:
        return text
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{mask}@", text)
    return _URL.sub(lambda m: _QUERY.sub(lambda q: q.group(1) + mask, m.group(0)), text)
