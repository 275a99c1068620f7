"""An agent's effective heartbeat settings, read from the live config on every use: a
`gsv config set` applies at the next tick, without a restart.

`agents.list[i].heartbeat` is merged over `agents.defaultHeartbeat` key by key, and
`activeHours` one level deeper (an override of `end` alone keeps the default `start`).
The merged object is checked against the config schema, so a typo in an agent's entry
is an error naming the field instead of a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gsv_core.config import HeartbeatConfig
from gsv_core.config.explain import explain
from gsv_core.errors import InvalidParams
from gsv_core.heartbeat.active_hours import ActiveHours
from gsv_core.heartbeat.active_hours import parse_active_hours
from gsv_core.heartbeat.duration import parse_duration
from gsv_core.routing import DEFAULT_AGENT_ID
from gsv_core.routing import normalise_agent_id

DEFAULT_FIELD = "agents.defaultHeartbeat"


@dataclass(frozen=True)
class HeartbeatSettings:
    agent_id: str
    every: str  # as configured, for people
    every_ms: int  # 0: heartbeats are off for this agent
    prompt: str
    target: str  # last | none | a channel name
    active_hours: ActiveHours

    @property
    def enabled(self) -> bool:
        return self.every_ms > 0


def agent_ids(config: Mapping[str, Any]) -> list[str]:
    """The agents that get heartbeats: the ids in `agents.list`, else the default agent."""
    entries = _agent_entries(config)
    ids = [normalise_agent_id(str(e["id"])) for e in entries if e.get("id")]
    return list(dict.fromkeys(ids)) or [DEFAULT_AGENT_ID]


def settings_for(config: Mapping[str, Any], agent_id: str) -> HeartbeatSettings:
    """The merged, checked settings of one agent (InvalidParams names a bad field)."""
    agents = config.get("agents")
    default = agents.get("defaultHeartbeat") if isinstance(agents, Mapping) else None
    merged = dict(default) if isinstance(default, Mapping) else {}
    field = DEFAULT_FIELD
    for index, entry in enumerate(_agent_entries(config)):
        if normalise_agent_id(str(entry.get("id", ""))) != agent_id or "heartbeat" not in entry:
            continue
        field = f"agents.list[{index}].heartbeat"
        merged = _merge(merged, entry["heartbeat"], field)
    checked = _checked(merged, field)
    user_tz = config.get("userTimezone")
    hours = checked.activeHours
    return HeartbeatSettings(
        agent_id=agent_id,
        every=checked.every,
        every_ms=parse_duration(checked.every, f"{field}.every"),
        prompt=checked.prompt.strip() or HeartbeatConfig().prompt,
        target=checked.target.strip() or "last",
        active_hours=parse_active_hours(
            hours.start, hours.end, hours.timezone,
            user_tz if isinstance(user_tz, str) else None, f"{field}.activeHours",
        ),
    )  # fmt: skip


def _agent_entries(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    agents = config.get("agents")
    entries = agents.get("list") if isinstance(agents, Mapping) else None
    return [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []


def _merge(base: dict[str, Any], override: Any, field: str) -> dict[str, Any]:
    if override is None:
        return base
    if not isinstance(override, Mapping):
        raise InvalidParams(f'{field}: must be an object like {{"every": "1h"}}')
    merged = {**base, **override}
    hours, own = base.get("activeHours"), override.get("activeHours")
    if isinstance(hours, Mapping) and isinstance(own, Mapping):
        merged["activeHours"] = {**hours, **own}
    return merged


def _checked(merged: dict[str, Any], field: str) -> HeartbeatConfig:
    try:
        return HeartbeatConfig.model_validate(merged)
    except ValidationError as exc:
        where, message = explain(exc.errors(), HeartbeatConfig, f"{field}.")
        raise InvalidParams(f"{where}: {message}") from None
