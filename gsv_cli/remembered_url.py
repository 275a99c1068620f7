"""Where later commands look for the gateway after `gsv gateway run|start --port N`.

Without this, a gateway started on another port (or host) is running while `gsv chat`
and every other command report it unreachable at the default URL. The gateway's own
`run` saves the URL it listens on as the local config's `gateway.url` when the user
chose where it listens and the commands would not look there; `--url` and `GSV_URL`
stay the caller's choice and are never overridden.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from gsv_cli.state import CliState

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def same_place(a: str, b: str) -> bool:
    """Whether two gateway URLs reach the same listener from here (loopback names alike)."""
    first, second = urlsplit(a), urlsplit(b)
    try:
        ports = first.port, second.port
    except ValueError:
        return False
    hosts = first.hostname, second.hostname
    same_host = hosts[0] == hosts[1] or (hosts[0] in LOOPBACK and hosts[1] in LOOPBACK)
    return first.scheme == second.scheme and ports[0] == ports[1] and same_host


def caller_chose_url(state: CliState) -> bool:
    return bool(state.url_flag or os.environ.get("GSV_URL", "").strip())


def remember(state: CliState, url: str) -> bool:
    """Save `url` as the local `gateway.url` when later commands would look elsewhere;
    True when it was saved."""
    if caller_chose_url(state) or same_place(url, state.url()):
        return False
    from gsv_core.localconfig import load_local_config

    local = load_local_config()
    local.set("gateway.url", url)
    local.save()
    return True


def saved_line(url: str) -> str:
    return f"later gsv commands connect to {url} (saved as gateway.url in the local config)\n"
