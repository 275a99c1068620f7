"""Which model a session runs on: a run's directive, the session's setting, the agent's
own model, the config's. Plain functions of a session record and the config, so a
session can be described without loading it."""

from __future__ import annotations

from typing import Any

from gsv_core.config import agent_entry
from gsv_core.config import agent_model
from gsv_core.config import setting
from gsv_core.config.model_refs import fallback_list
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


def fallback_models(
    record: SessionRecord, config: dict[str, Any], model: tuple[str, str]
) -> list[tuple[str, str]]:
    """The models tried in order after `model` when it cannot answer: the session's
    `settings.fallbacks` > the agent's `fallbacks` in `agents.list` > `model.fallbacks`
    (the first level that sets a list, even an empty one, decides); `model` itself and
    repeats are left out."""
    for chosen in (
        record.settings.get("fallbacks"),
        agent_entry(config, record.agent_id).get("fallbacks"),
        setting(config, "model.fallbacks"),
    ):
        models = fallback_list(chosen)
        if models is not None:
            return [m for i, m in enumerate(models) if m != model and m not in models[:i]]
    return []
