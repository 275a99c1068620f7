"""Cron jobs (as `cron.*` carries them, docs/protocol.md#methods): the in-memory shape, its wire
form, and the validation of `cron.add` documents and `cron.update` patches. Pure: every
error is an InvalidParams naming the field.

Specs:
    {"mode": "systemEvent", "text": str}                 into the agent's main session
    {"mode": "task", "message": str, "model"?: "provider/id", "thinking"?: level,
     "timeoutSeconds"?: number, "deliver"?: bool, "channel"?: str, "to"?: str,
     "bestEffortDeliver"?: bool}                          a fresh isolated session per run
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from gsv_core.cron.schedule import normalise_schedule
from gsv_core.cron.schedule import tag_of
from gsv_core.errors import InvalidParams
from gsv_core.routing import normalise_agent_id

MODES = ("systemEvent", "task")
# the values of a session's `settings.thinkingLevel`, plus the aliases people type
THINK_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh")
_THINK_ALIASES = {"off": "none", "min": "minimal", "med": "medium", "max": "xhigh"}
MAX_NAME = 200
MAX_TEXT = 100_000
MAX_TIMEOUT_SECONDS = 86_400
_MODEL = re.compile(r"([^\s/]+)/(\S+)")
_TASK_OPTIONAL: dict[str, type] = {
    "deliver": bool,
    "bestEffortDeliver": bool,
    "channel": str,
    "to": str,
}
# JobState's fields by their names in a job's wire `state` (`retries` aside: 0 is left out)
_STATE_WIRE = {
    "next_run_at_ms": "nextRunAtMs",
    "running_at_ms": "runningAtMs",
    "last_run_at_ms": "lastRunAtMs",
    "last_status": "lastStatus",
    "last_error": "lastError",
    "last_duration_ms": "lastDurationMs",
}


@dataclass
class JobState:
    next_run_at_ms: int | None = None
    running_at_ms: int | None = None
    last_run_at_ms: int | None = None
    last_status: str | None = None
    last_error: str | None = None
    last_duration_ms: int | None = None
    retries: int = 0  # failed runs of a one-shot job since its last success

    def to_wire(self) -> dict[str, Any]:
        fields = {wire: getattr(self, name) for name, wire in _STATE_WIRE.items()}
        fields["retries"] = self.retries or None
        return {k: v for k, v in fields.items() if v is not None}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> JobState:
        known = {name: data.get(wire) for name, wire in _STATE_WIRE.items()}
        return cls(**known, retries=int(data.get("retries") or 0))


@dataclass
class CronJob:
    id: str
    agent_id: str
    name: str
    schedule: dict[str, Any]
    spec: dict[str, Any]
    created_at_ms: int
    updated_at_ms: int
    description: str | None = None
    enabled: bool = True
    delete_after_run: bool = False
    state: JobState = field(default_factory=JobState)

    @property
    def one_shot(self) -> bool:
        return bool(self.schedule["kind"] == "at")

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "id": self.id,
            "agentId": self.agent_id,
            "name": self.name,
            "enabled": self.enabled,
            "deleteAfterRun": self.delete_after_run,
            "createdAtMs": self.created_at_ms,
            "updatedAtMs": self.updated_at_ms,
            "schedule": dict(self.schedule),
            "spec": dict(self.spec),
            "state": self.state.to_wire(),
        }
        if self.description:
            wire["description"] = self.description
        return wire

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> CronJob:
        return cls(
            id=data["id"],
            agent_id=data["agentId"],
            name=data["name"],
            schedule=dict(data["schedule"]),
            spec=dict(data["spec"]),
            created_at_ms=data["createdAtMs"],
            updated_at_ms=data["updatedAtMs"],
            description=data.get("description"),
            enabled=bool(data.get("enabled", True)),
            delete_after_run=bool(data.get("deleteAfterRun", False)),
            state=JobState.from_wire(data.get("state") or {}),
        )


# --------------------------------------------------------------------------- validation


def new_job(doc: Any, job_id: str, now_ms: int) -> CronJob:
    """A job from a `cron.add` document, validated."""
    if not isinstance(doc, Mapping):
        raise InvalidParams("the job must be an object with name, schedule and spec")
    return CronJob(
        id=job_id,
        agent_id=_agent(doc.get("agentId")),
        name=_name(doc.get("name")),
        description=_description(doc.get("description")),
        enabled=_flag(doc, "enabled", True),
        delete_after_run=_flag(doc, "deleteAfterRun", False),
        schedule=normalise_schedule(doc.get("schedule")),
        spec=validate_spec(doc.get("spec")),
        created_at_ms=now_ms,
        updated_at_ms=now_ms,
    )


def patched_job(job: CronJob, patch: Any, now_ms: int) -> CronJob:
    """A copy of `job` with a CronJobPatch applied (state kept; the caller recomputes
    the next run). A spec patch of the same mode merges field by field (null removes a
    field); one of another mode replaces the spec and must be complete."""
    if not isinstance(patch, Mapping):
        raise InvalidParams("patch must be an object")
    changes: dict[str, Any] = {"updated_at_ms": now_ms, "state": replace(job.state)}
    if "name" in patch:
        changes["name"] = _name(patch["name"], "patch.name")
    if "description" in patch:
        changes["description"] = _description(patch["description"], "patch.description")
    if patch.get("agentId") is not None:
        changes["agent_id"] = _agent(patch["agentId"], "patch.agentId")
    for key, attr in (("enabled", "enabled"), ("deleteAfterRun", "delete_after_run")):
        if patch.get(key) is not None:
            changes[attr] = _flag(patch, key, False, f"patch.{key}")
    if patch.get("schedule") is not None:
        changes["schedule"] = normalise_schedule(patch["schedule"], "patch.schedule")
    if patch.get("spec") is not None:
        changes["spec"] = merge_spec(job.spec, patch["spec"])
    return replace(job, **changes)


def validate_spec(raw: Any, where: str = "spec") -> dict[str, Any]:
    """The canonical spec in `raw`; InvalidParams names the field."""
    mode = tag_of(raw, where, "mode", "systemEvent or task")
    if mode == "systemEvent":
        return {"mode": mode, "text": _text(raw.get("text"), f"{where}.text")}
    if mode != "task":
        raise InvalidParams(f"{where}.mode must be systemEvent or task (got {mode!r})")
    spec: dict[str, Any] = {"mode": mode, "message": _text(raw.get("message"), f"{where}.message")}
    if raw.get("model") is not None:
        spec["model"] = parse_model(raw["model"], f"{where}.model")
    if raw.get("thinking") is not None:
        spec["thinking"] = parse_thinking(raw["thinking"], f"{where}.thinking")
    if raw.get("timeoutSeconds") is not None:
        spec["timeoutSeconds"] = _timeout(raw["timeoutSeconds"], f"{where}.timeoutSeconds")
    for key, kind in _TASK_OPTIONAL.items():
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, kind):
            raise InvalidParams(
                f"{where}.{key} must be a {'boolean' if kind is bool else 'string'}"
            )
        if isinstance(value, str):
            value = value.strip()
            if not value:
                continue
        spec[key] = value
    return spec


def merge_spec(current: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, Mapping):
        raise InvalidParams("patch.spec must be an object")
    mode = patch.get("mode") or current["mode"]
    if mode != current["mode"]:
        return validate_spec({**patch, "mode": mode}, "patch.spec")
    merged = {**current, **patch, "mode": mode}
    return validate_spec({k: v for k, v in merged.items() if v is not None}, "patch.spec")


def parse_model(raw: Any, where: str = "spec.model") -> str:
    """A `provider/model-id` selector (provider lowercased)."""
    match = _MODEL.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        raise InvalidParams(f"{where} must be provider/model-id, e.g. anthropic/claude-sonnet-4")
    return f"{match.group(1).lower()}/{match.group(2)}"


def parse_thinking(raw: Any, where: str = "spec.thinking") -> str:
    level = raw.strip().lower() if isinstance(raw, str) else ""
    level = _THINK_ALIASES.get(level, level)
    if level not in THINK_LEVELS:
        raise InvalidParams(f"{where} must be one of {', '.join(THINK_LEVELS)} (got {raw!r})")
    return level


def _timeout(raw: Any, where: str) -> int | float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not raw > 0:
        raise InvalidParams(f"{where} must be a number of seconds above 0")
    if raw > MAX_TIMEOUT_SECONDS:
        raise InvalidParams(f"{where} must be at most {MAX_TIMEOUT_SECONDS} (one day)")
    return raw


def _text(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidParams(f"{where} is required and must not be blank")
    if len(raw) > MAX_TEXT:
        raise InvalidParams(f"{where} is longer than {MAX_TEXT} characters")
    return raw.strip()


def _name(raw: Any, where: str = "name") -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidParams(f"{where} is required and must not be blank")
    if len(raw.strip()) > MAX_NAME:
        raise InvalidParams(f"{where} is longer than {MAX_NAME} characters")
    return raw.strip()


def _description(raw: Any, where: str = "description") -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidParams(f"{where} must be a string")
    return raw.strip() or None


def _agent(raw: Any, where: str = "agentId") -> str:
    if raw is not None and not isinstance(raw, str):
        raise InvalidParams(f"{where} must be a string")
    return normalise_agent_id(raw)


def _flag(doc: Mapping[str, Any], key: str, default: bool, where: str | None = None) -> bool:
    value = doc.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidParams(f"{where or key} must be true or false")
    return value
