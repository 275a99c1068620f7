"""What the scheduler knows of each agent, in the shape `heartbeat.status` shows (with
gsv's `every`, `running` and `lastResult`). Kept in memory: after a restart every
agent's next beat is one interval after start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class BeatResult:
    """How one beat ended: `ok` (ran; delivered or held back), `skipped` or `error`."""

    at: int
    trigger: str  # interval | manual
    status: str  # ok | skipped | error
    skip_reason: str | None = None
    error: str | None = None
    delivered: bool = False
    held_back: str | None = None  # why an ok reply was not delivered
    delivered_to: str | None = None
    reply: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"at": self.at, "trigger": self.trigger, "status": self.status}
        optional = {"skipReason": self.skip_reason, "error": self.error,
                    "heldBack": self.held_back, "deliveredTo": self.delivered_to}  # fmt: skip
        wire.update({k: v for k, v in optional.items() if v is not None})
        if self.status == "ok":
            wire["delivered"] = self.delivered
        return wire


@dataclass
class HeartbeatState:
    agent_id: str
    # beats are due one interval after the anchor: the scheduler's start or the last beat
    anchor_ms: int
    every: str | None = None
    every_ms: int = 0  # 0: off (or not read yet)
    next_at: int | None = None
    last_at: int | None = None  # the last beat that called the model
    last_text: str | None = None  # the last text delivered, and when
    last_sent_at: int | None = None
    last_result: BeatResult | None = None
    problem: str | None = None  # the settings cannot be read (no beats until fixed)
    running: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "agentId": self.agent_id,
            "nextHeartbeatAt": self.next_at,
            "lastHeartbeatAt": self.last_at,
            "lastHeartbeatText": self.last_text,
            "lastHeartbeatSentAt": self.last_sent_at,
            "every": self.every,
            "running": self.running,
        }
        result = self.last_result.to_wire() if self.last_result is not None else None
        optional = {"error": self.problem, "lastResult": result}
        wire.update({k: v for k, v in optional.items() if v is not None})
        return wire
