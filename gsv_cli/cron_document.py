"""A cron job document for `gsv cron add` and `gsv cron update`: built from the command
line's flags (`JobFlags`) or read from `--from-json`, and checked here before anything is
sent (a bad schedule or option is a usage error, exit 2)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import NoReturn

import typer

from gsv_cli import output

EXIT_USAGE = 2


@dataclass
class JobFlags:
    """Everything `add` and `update` take from the command line."""

    name: str | None = None
    at: str | None = None
    every: str | None = None
    anchor: str | None = None
    cron: str | None = None
    tz: str | None = None
    message: str | None = None
    system_event: str | None = None
    deliver: bool | None = None
    channel: str | None = None
    to: str | None = None
    model: str | None = None
    thinking: str | None = None
    timeout: float | None = None
    agent: str | None = None
    description: str | None = None
    enabled: bool | None = None
    delete_after_run: bool | None = None

    def task_options(self) -> dict[str, Any]:
        options = {"deliver": self.deliver, "channel": self.channel, "to": self.to,
                   "model": self.model, "thinking": self.thinking,
                   "timeoutSeconds": self.timeout}  # fmt: skip
        return {k: v for k, v in options.items() if v is not None}


def usage_error(message: str) -> NoReturn:
    output.print_error(message)
    raise typer.Exit(EXIT_USAGE)


def schedule_of(flags: JobFlags) -> dict[str, Any] | None:
    """The tool-style schedule the flags describe (None: no schedule flag)."""
    chosen = [f for f, v in (("--at", flags.at), ("--every", flags.every),
                             ("--cron", flags.cron)) if v is not None]  # fmt: skip
    if len(chosen) > 1:
        usage_error(f"give one schedule, not {' and '.join(chosen)}")
    if flags.anchor is not None and flags.every is None:
        usage_error("--anchor goes with --every")
    if flags.tz is not None and flags.cron is None:
        usage_error("--tz goes with --cron")
    if flags.at is not None:
        return {"kind": "at", "at": flags.at}
    if flags.every is not None:
        every = {"kind": "every", "every": flags.every}
        return every if flags.anchor is None else {**every, "anchor": flags.anchor}
    if flags.cron is not None:
        return {"kind": "cron", "expr": flags.cron, **({"tz": flags.tz} if flags.tz else {})}
    return None


def spec_of(flags: JobFlags) -> dict[str, Any] | None:
    """The spec the flags describe (None: no spec flag)."""
    options = flags.task_options()
    if flags.message is not None and flags.system_event is not None:
        usage_error("give --message (a task) or --system-event, not both")
    if flags.system_event is not None:
        if options:
            usage_error(f"{', '.join(options)} only apply to tasks (--message)")
        return {"mode": "systemEvent", "text": flags.system_event}
    if flags.message is not None:
        return {"mode": "task", "message": flags.message, **options}
    return {"mode": "task", **options} if options else None


def job_fields(flags: JobFlags) -> dict[str, Any]:
    fields = {"name": flags.name, "description": flags.description, "agentId": flags.agent,
              "enabled": flags.enabled, "deleteAfterRun": flags.delete_after_run,
              "schedule": schedule_of(flags), "spec": spec_of(flags)}  # fmt: skip
    return {k: v for k, v in fields.items() if v is not None}


def read_document(source: str) -> dict[str, Any]:
    """A JSON object from a file, or stdin for `-`."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        document = json.loads(text)
    except OSError as exc:
        usage_error(f"--from-json: cannot read {source}: {exc.strerror or exc}")
    except json.JSONDecodeError as exc:
        usage_error(f"--from-json: {source} is not JSON: {exc}")
    if not isinstance(document, dict):
        usage_error("--from-json: the document must be a JSON object")
    return document


def canonical(document: dict[str, Any], tz: str, *, patch: bool) -> dict[str, Any]:
    """The document with its schedule made canonical in `tz` and checked (a new job
    whole; a patch field by field, as the job it patches is not known here)."""
    from gsv_core.cron.jobs import new_job
    from gsv_core.cron.jobs import parse_model
    from gsv_core.cron.jobs import parse_thinking
    from gsv_core.cron.tool_input import tool_job
    from gsv_core.cron.tool_input import tool_patch

    now = int(time.time() * 1000)
    if not patch:
        result = tool_job(document, now, tz)
        new_job(result, "local", now)
        return result
    result = tool_patch(document, now, tz)
    spec = result.get("spec")
    if isinstance(spec, dict):
        if spec.get("model") is not None:
            parse_model(spec["model"], "patch.spec.model")
        if spec.get("thinking") is not None:
            parse_thinking(spec["thinking"], "patch.spec.thinking")
    return result


def check_locally(document: dict[str, Any], *, patch: bool) -> None:
    """Catch bad options before connecting (times checked in UTC; the gateway's zone is
    applied later)."""
    from gsv_core.errors import InvalidParams

    try:
        canonical(document, "UTC", patch=patch)
    except InvalidParams as exc:
        usage_error(exc.message)


def new_job_document(flags: JobFlags, from_json: str | None) -> dict[str, Any]:
    """The job `add` sends: from --from-json, or from the flags (which must name it, say
    when it runs and what it does)."""
    fields = job_fields(flags)
    if from_json is not None:
        return _from_json(from_json, fields)
    if flags.name is None:
        usage_error("--name is required")
    if "schedule" not in fields:
        usage_error("give a schedule: --at, --every or --cron")
    if "spec" not in fields or ("message" not in fields["spec"] and "text" not in fields["spec"]):
        usage_error("give what to do: --message TEXT (a task) or --system-event TEXT")
    return fields


def patch_document(flags: JobFlags, from_json: str | None) -> dict[str, Any]:
    """The patch `update` sends: from --from-json, or the fields the flags give."""
    fields = job_fields(flags)
    if from_json is not None:
        return _from_json(from_json, fields)
    if not fields:
        usage_error("nothing to change: give at least one option (see --help)")
    return fields


def _from_json(source: str, fields: dict[str, Any]) -> dict[str, Any]:
    if fields:
        usage_error(f"--from-json cannot be combined with {', '.join(sorted(fields))}")
    return read_document(source)
