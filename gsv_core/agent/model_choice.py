"""Which model a session runs on: a run's directive, the session's setting, the agent's
own model, the config's. Plain functions of a session record and the config, so a
session can be described without loading it."""

from __future__ import annotations

from typing import Any

from gsv_core.config import agent_model, setting
from gsv_core.storage.sessions import SessionRecord


def effective_model(
    record: SessionRecord, config: dict[str, Any], override: Any = None
) -> tuple[str, str]:
    """Run override (directive) > session setting > the agent's own `model` in
    `agents.list` > config `model`."""
    if isinstance(override, dict):
        return str(override["provider"]), str(override["id"])
    chosen = record.settings.get("model")
    if isinstance(chosen, dict) and chosen.get("provider") and chosen.get("id"):
        return str(chosen["provider"]), str(chosen["id"])
    own = agent_model(config, record.agent_id)
    if own is not None:
        return own
    return str(setting(config, "model.provider")), str(setting(config, "model.id"))


def next_model(record: SessionRecord, config: dict[str, Any]) -> tuple[str, str]:
    """The model the next message will use unless it names one: a directive-only
    message's model (kept for the next message) over `effective_model()`."""
    pending = (record.pending_overrides or {}).get("model")
    if isinstance(pending, dict) and pending.get("provider") and pending.get("id"):
        return str(pending["provider"]), str(pending["id"])
    return effective_model(record, config)
