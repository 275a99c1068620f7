"""`gsv__Cron` (docs/tools.md#gateway-native-tools): one tool, an `action` per cron operation.

Times are normalised tool-side (gsv_core.cron.tool_input: "in 2 hours", "tomorrow 9am",
everyMinutes + anchor, cron expr with tz defaulting to userTimezone). `add` takes the
`job` object or the same fields flat; a job belongs to the calling agent unless it names
another. `list` adds each schedule in words, its next run in its own zone, the user's
timezone and the current time, so the model can reason about "when".

`run` waits (up to two minutes) for the runs it starts, except a system event into the
calling session itself, which can only start after this turn: it is reported `running`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.cron.jobs import CronJob
from gsv_core.cron.schedule import describe_schedule
from gsv_core.cron.schedule import format_local
from gsv_core.cron.schedule import lenient_zone
from gsv_core.cron.schedule import schedule_zone
from gsv_core.cron.service import Running
from gsv_core.cron.tool_input import tool_job
from gsv_core.cron.tool_input import tool_patch
from gsv_core.errors import InvalidParams
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

RUN_WAIT_SECONDS = 120.0
_FLAT_JOB_FIELDS = ("name", "description", "schedule", "spec", "enabled", "deleteAfterRun")

# the shapes of `job` (free objects in the schema: the cron module normalises them)
DESCRIPTION = (
    "Manage scheduled cron jobs. add: job {name, schedule, spec} (or those fields flat). "
    'schedule: {kind:"at", at:"tomorrow 9am" | "2026-02-14 09:30" | "in 2 hours"} | '
    '{kind:"every", everyMinutes|everyHours|everyDays, anchor?} | '
    '{kind:"cron", expr:"0 9 * * 1-5", tz?}; times without a zone are the user\'s. '
    'spec: {mode:"systemEvent", text} (into your main conversation) | {mode:"task", '
    "message, model?, thinking?, timeoutSeconds?, deliver?, channel?, to?} (a fresh "
    "session each run). update: id + patch."
)


class CronArgs(NativeArgs):
    action: Literal["status", "list", "add", "update", "remove", "run", "runs"]
    id: str | None = Field(default=None, description="Job id (update, remove, run).")
    mode: Literal["due", "force"] = Field(default="due", description="For run.")
    agentId: str | None = Field(default=None, description="Agent filter, or owner for add.")
    includeDisabled: bool = Field(default=True, description="For list.")
    limit: int = Field(default=50, ge=1, le=500, description="For list and runs.")
    offset: int = Field(default=0, ge=0, description="For list and runs.")
    job: dict[str, Any] | None = Field(default=None, description="For add.")
    patch: dict[str, Any] | None = Field(default=None, description="For update.")
    jobId: str | None = Field(default=None, description="runs: only this job's.")
    # add's flat form: the job's own fields (the description says so once)
    name: str | None = None
    description: str | None = None
    schedule: dict[str, Any] | str | None = None
    spec: dict[str, Any] | None = None
    enabled: bool | None = None
    deleteAfterRun: bool | None = None


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    cron = gateway.cron

    def job_view(job: CronJob) -> dict[str, Any]:
        """A job as the model sees it: the wire shape plus the schedule in words."""
        tz = cron.user_tz()
        view = job.to_wire()
        view["scheduleText"] = describe_schedule(job.schedule, tz)
        upcoming = job.state.next_run_at_ms
        if upcoming is not None:
            view["nextRunText"] = format_local(upcoming, schedule_zone(job.schedule, tz))
        return view

    def clock() -> dict[str, Any]:
        tz = cron.user_tz()
        now = dt.datetime.fromtimestamp(gateway.now_ms() / 1000, lenient_zone(tz))
        return {"timezone": tz, "currentTime": now.isoformat(timespec="seconds")}

    async def add(args: CronArgs, ctx: ToolCallContext) -> dict[str, Any]:
        raw = args.job if args.job is not None else _flat_job(args)
        doc = tool_job(raw, gateway.now_ms(), cron.user_tz())
        doc.setdefault("agentId", args.agentId or ctx.agent_id)
        job = await cron.add(doc)
        return {"ok": True, "job": job_view(job)}

    async def run(args: CronArgs, ctx: ToolCallContext) -> dict[str, Any]:
        results, started = await cron.trigger(args.id, args.mode)
        waitable = [r.task for r in started if r.session_key != ctx.session_key]
        if waitable:
            await asyncio.wait(waitable, timeout=RUN_WAIT_SECONDS)
        results += [_run_result(r) for r in started]
        ran = sum(1 for r in results if r["status"] != "skipped")
        return {"ok": True, "ran": ran, "results": results}

    async def cron_tool(args: CronArgs, ctx: ToolCallContext) -> dict[str, Any]:
        if args.action == "status":
            return {**cron.status(args.agentId), **clock()}
        if args.action == "list":
            jobs = cron.jobs(args.agentId, args.includeDisabled)
            page = jobs[args.offset : args.offset + args.limit]
            return {"jobs": [job_view(j) for j in page], "count": len(jobs), **clock()}
        if args.action == "add":
            return await add(args, ctx)
        if args.action == "update":
            patch = tool_patch(_required(args.patch, "patch"), gateway.now_ms(), cron.user_tz())
            job = await cron.update(_required(args.id, "id"), patch)
            return {"ok": True, "job": job_view(job)}
        if args.action == "remove":
            return {"ok": True, "removed": await cron.remove(_required(args.id, "id"))}
        if args.action == "run":
            return await run(args, ctx)
        runs, total = await cron.runs(args.jobId, args.offset, args.limit)
        return {"runs": runs, "count": total}

    registry.add(NativeTool("gsv__Cron", DESCRIPTION, CronArgs, cron_tool))


def _flat_job(args: CronArgs) -> dict[str, Any]:
    fields = {key: getattr(args, key) for key in _FLAT_JOB_FIELDS}
    if fields["name"] is None and fields["schedule"] is None:
        raise InvalidParams("add needs job (an object with name, schedule, spec) or those fields")
    return {key: value for key, value in fields.items() if value is not None}


def _required(value: Any, name: str) -> Any:
    if value is None:
        raise InvalidParams(f"{name} is required for this action")
    return value


def _run_result(running: Running) -> dict[str, Any]:
    task = running.task
    if task.done() and not task.cancelled() and task.exception() is None:
        result: dict[str, Any] = task.result()
        return result
    return {"jobId": running.job_id, "status": "running", "sessionKey": running.session_key}
