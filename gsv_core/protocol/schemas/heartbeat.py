"""`heartbeat.*` params (docs/protocol.md#methods). `heartbeat.status` and `heartbeat.start`
take no params in the seed; gsv lets both name one agent (`agentId`)."""

from __future__ import annotations

from pydantic import Field

from gsv_core.protocol.schemas import WireModel


class HeartbeatAgentParams(WireModel):
    """status / start: every agent, or only `agentId`."""

    agentId: str | None = Field(default=None, min_length=1, max_length=64)


class HeartbeatTriggerParams(WireModel):
    agentId: str = Field(default="main", min_length=1, max_length=64)
