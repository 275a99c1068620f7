"""What the heartbeat scheduler needs of the gateway, as a Protocol: the gateway (the
composition root) implements it over its sessions, workspace and channels, so this
package never imports the agent, the channels or the gateway."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from typing import Protocol


@dataclass(frozen=True)
class LastActive:
    """Where the agent last heard from a person on a channel."""

    channel: str
    account_id: str
    peer: dict[str, Any]
    session_key: str
    timestamp: int

    def to_wire(self) -> dict[str, Any]:
        return {"channel": self.channel, "accountId": self.account_id, "peer": self.peer,
                "sessionKey": self.session_key, "timestamp": self.timestamp}  # fmt: skip


class HeartbeatHost(Protocol):
    def config(self) -> Mapping[str, Any]: ...

    def now_ms(self) -> int: ...

    async def read_checklist(self, agent_id: str) -> str | None:
        """HEARTBEAT.md of the agent's workspace (None: there is none)."""
        ...

    def last_active(self) -> dict[str, LastActive]:
        """agent id -> where it last heard from a person, for agents that have."""
        ...

    def session_busy(self, agent_id: str, last: LastActive | None) -> bool:
        """Whether the person's session (`last`'s, else the main one) or the heartbeat
        session is running or has a queue."""
        ...

    async def over_budget(self, agent_id: str) -> bool:
        """Whether background work may not spend now (the owner is told, once a day)."""
        ...

    async def run_turn(self, agent_id: str, session_key: str, text: str) -> str:
        """Send `text` into the session and return the reply's text once the run ended
        (GsvError when it failed)."""
        ...

    async def deliver(self, agent_id: str, text: str, to: LastActive | None) -> str:
        """Send an alert to the channel peer `to`, or (None) to the clients of the agent's
        main session; returns where it went, for the status."""
        ...
