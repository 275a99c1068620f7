"""Defaults the gateway, the client and the CLI share: where a gateway listens and is
found when nothing says otherwise, the largest WebSocket message either side takes, and
the sandboxes a node may be told to use.

Standard library only, so the CLI can read it without slowing `gsv --help`.
"""

from __future__ import annotations

from typing import Final

DEFAULT_GATEWAY_HOST: Final = "127.0.0.1"  # loopback: nothing is exposed unless asked
DEFAULT_GATEWAY_PORT: Final = 8787
DEFAULT_GATEWAY_URL: Final = f"ws://{DEFAULT_GATEWAY_HOST}:{DEFAULT_GATEWAY_PORT}/ws"

# the gateway pings a peer it has not heard from for this long (gateway/keepalive.py);
# a node's heartbeat comes more often, so an idle node is never pinged
GATEWAY_PING_INTERVAL: Final = 10.0

# a whole session history or a large tool result travels in one message
MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024

# `node.sandbox` / `gsv node --sandbox` (gsv_core/node/sandbox/choose.py, docs/sandbox.md)
SANDBOX_MODES: Final = ("auto", "bwrap", "seatbelt", "off")
