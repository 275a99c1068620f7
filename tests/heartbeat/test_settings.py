"""An agent's heartbeat settings: defaults, per-agent overrides, errors naming fields."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.config import HeartbeatConfig
from gsv_core.config import effective_config
from gsv_core.errors import InvalidParams
from gsv_core.heartbeat.settings import agent_ids
from gsv_core.heartbeat.settings import settings_for


def config(**overrides: Any) -> dict[str, Any]:
    return effective_config(overrides)


def test_defaults_apply_to_the_default_agent() -> None:
    """Without agents.list, `main` gets agents.defaultHeartbeat as shipped."""
    cfg = config()
    assert agent_ids(cfg) == ["main"]
    settings = settings_for(cfg, "main")
    assert (settings.every, settings.every_ms, settings.target) == ("30m", 1_800_000, "last")
    assert settings.prompt.endswith("reply HEARTBEAT_OK.")
    assert (settings.active_hours.start, settings.active_hours.end) == (8 * 60, 23 * 60)
    assert settings.active_hours.zone.key == "UTC"


def test_an_agent_entry_is_merged_over_the_default() -> None:
    """agents.list[i].heartbeat overrides key by key; activeHours merges one level down."""
    cfg = config(
        userTimezone="Europe/Madrid",
        agents={
            "defaultHeartbeat": {"every": "1h", "target": "none"},
            "list": [
                {"id": "main"},
                {"id": "Ops", "heartbeat": {"every": "5m", "activeHours": {"end": "24:00"}}},
            ],
        },
    )
    assert agent_ids(cfg) == ["main", "ops"]
    main, ops = settings_for(cfg, "main"), settings_for(cfg, "ops")
    assert (main.every_ms, main.target) == (3_600_000, "none")
    assert (ops.every_ms, ops.target) == (300_000, "none")
    assert (ops.active_hours.start, ops.active_hours.end) == (8 * 60, 24 * 60)
    assert ops.active_hours.zone.key == "Europe/Madrid"


def test_off_switches_an_agent_off() -> None:
    """every "off" (or 0) disables the agent's heartbeats."""
    cfg = config(agents={"list": [{"id": "main", "heartbeat": {"every": "off"}}]})
    assert settings_for(cfg, "main").enabled is False


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"every": "soon"}, r"agents\.list\[0\]\.heartbeat\.every: cannot read 'soon'"),
        ({"evry": "1h"}, r"agents\.list\[0\]\.heartbeat\.evry: .*did you mean agents\.list\[0\]\.heartbeat\.every"),
        ({"every": 30}, r"agents\.list\[0\]\.heartbeat\.every: .*expects text"),
        ({"activeHours": {"end": "24:30"}},
         r"agents\.list\[0\]\.heartbeat\.activeHours\.end: '24:30' is not a time of day"),
        ({"activeHours": {"timezone": "Nowhere/City"}}, r"unknown time zone 'Nowhere/City'"),
        ("hourly", r"agents\.list\[0\]\.heartbeat: must be an object"),
    ],
)  # fmt: skip
def test_bad_agent_settings_are_errors_naming_the_field(entry: Any, message: str) -> None:
    """A typo in an agent's heartbeat entry is a 400 naming the field, not a default."""
    cfg = config(agents={"list": [{"id": "main", "heartbeat": entry}]})
    with pytest.raises(InvalidParams, match=message):
        settings_for(cfg, "main")


def test_a_bad_default_names_the_default() -> None:
    """An unreadable agents.defaultHeartbeat.every names that field."""
    cfg = config(agents={"defaultHeartbeat": {"every": "often"}})
    with pytest.raises(InvalidParams, match=r"agents\.defaultHeartbeat\.every"):
        settings_for(cfg, "main")


def test_a_per_agent_heartbeat_prompt_wins_over_the_default() -> None:
    """agents.list[id].heartbeat.prompt (ids compared normalised), else the default's; an
    empty prompt falls back to the shipped one (the system prompt reads it this way too)."""
    config = {
        "agents": {
            "defaultHeartbeat": {"prompt": "default"},
            "list": [{"id": "Helper", "heartbeat": {"prompt": "helper's"}}, "junk"],
        }
    }
    assert settings_for(config, "helper").prompt == "helper's"
    assert settings_for(config, "main").prompt == "default"
    blank = {"agents": {"defaultHeartbeat": {"prompt": "  "}}}
    assert settings_for(blank, "main").prompt == HeartbeatConfig().prompt
