"""`gsv cron ...`: scheduled jobs, made for scripts as much as for people.

    add --name N (--at WHEN | --every 30m [--anchor WHEN] | --cron EXPR [--tz ZONE])
        (--message TEXT [task options] | --system-event TEXT) [--from-json FILE|-]
    status | list [--all] [--agent A] | update ID [flags] | remove ID
    run [ID] [--force] | runs [--job ID] [-n N]

`add` prints only the new job's id (the whole job with --json) and exits 0; an invalid
schedule or option prints the problem on stderr and exits 2 (checked here first, and a
400 from the gateway maps to 2 as well); any other gateway error exits 1, an unreachable
gateway 3. Times without a zone are in the gateway's `userTimezone`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.cron_document import JobFlags
from gsv_cli.cron_document import canonical
from gsv_cli.cron_document import check_locally
from gsv_cli.cron_document import new_job_document
from gsv_cli.cron_document import patch_document
from gsv_cli.cron_document import usage_error
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

if TYPE_CHECKING:
    from gsv_core.client import GatewayClient

app = plain_app(
    help="Scheduled jobs: add, list, run and remove them (script-friendly).",
    no_args_is_help=True,
)

RUN_TIMEOUT = 3600.0

NameOpt = Annotated[str | None, typer.Option("--name", help="Job name.")]
AtOpt = Annotated[
    str | None,
    typer.Option("--at", help="Once: 2026-02-14 09:30, 'in 2 hours', 'tomorrow 9am'."),
]
EveryOpt = Annotated[str | None, typer.Option("--every", help="Repeat: 30m, 2h, 1d.")]
AnchorOpt = Annotated[
    str | None, typer.Option("--anchor", help="With --every: the first run (a time).")
]
CronOpt = Annotated[
    str | None, typer.Option("--cron", help="A 5-field cron expression, e.g. '0 9 * * 1-5'.")
]
TzOpt = Annotated[
    str | None, typer.Option("--tz", help="With --cron: IANA zone (default userTimezone).")
]
MessageOpt = Annotated[
    str | None, typer.Option("--message", help="Task: run a full turn in a fresh session.")
]
EventOpt = Annotated[
    str | None,
    typer.Option("--system-event", help="Put this text into the agent's main session."),
]
DeliverOpt = Annotated[
    bool | None, typer.Option("--deliver/--no-deliver", help="Deliver the task's reply.")
]
ChannelOpt = Annotated[str | None, typer.Option("--channel", help="Deliver to this channel.")]
ToOpt = Annotated[str | None, typer.Option("--to", help="Deliver to this peer.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Task model: provider/id.")]
ThinkingOpt = Annotated[
    str | None, typer.Option("--thinking", help="Task thinking level (off, low, high ...).")
]
TimeoutOpt = Annotated[
    float | None, typer.Option("--timeout", help="Stop the task after S seconds.")
]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id (default main).")]
DescriptionOpt = Annotated[str | None, typer.Option("--description", help="Description.")]
FromJsonOpt = Annotated[
    str | None,
    typer.Option("--from-json", metavar="FILE|-", help="Read the job document from a file."),
]


async def user_timezone(client: GatewayClient) -> str:
    from gsv_core.protocol.methods import CONFIG_GET

    found = await client.call(CONFIG_GET, {"path": "userTimezone"})
    value = found.get("value")
    return value if isinstance(value, str) and value else "UTC"


def send_job(
    state: CliState, method: str, params: Any, document: dict[str, Any], *, patch: bool
) -> Any:
    """Connect, make the schedule canonical in the gateway's zone (as a patch or a whole
    job), call `method`; a 400 (from here or the gateway) is a usage error (exit 2)."""
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.errors import InvalidParams

    async def main() -> Any:
        async with gateway_client(state) as client:
            try:
                tz = await user_timezone(client)
                final = canonical(document, tz, patch=patch)
                return await client.call(method, params(final))
            except InvalidParams as exc:
                usage_error(exc.message)

    return run(main)


# --------------------------------------------------------------------------- commands


@app.command("add")
def add(
    ctx: typer.Context,
    name: NameOpt = None,
    at: AtOpt = None,
    every: EveryOpt = None,
    anchor: AnchorOpt = None,
    cron_expr: CronOpt = None,
    tz: TzOpt = None,
    message: MessageOpt = None,
    system_event: EventOpt = None,
    deliver: DeliverOpt = None,
    channel: ChannelOpt = None,
    to: ToOpt = None,
    model: ModelOpt = None,
    thinking: ThinkingOpt = None,
    timeout: TimeoutOpt = None,
    agent: AgentOpt = None,
    description: DescriptionOpt = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it disabled.")] = False,
    delete_after_run: Annotated[
        bool, typer.Option("--delete-after-run", help="Remove a one-shot job after success.")
    ] = False,
    from_json: FromJsonOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Create a job; prints its id (the whole job with --json)."""
    flags = JobFlags(name, at, every, anchor, cron_expr, tz, message, system_event, deliver,
                     channel, to, model, thinking, timeout, agent, description,
                     False if disabled else None, True if delete_after_run else None)  # fmt: skip
    document = new_job_document(flags, from_json)
    from gsv_core.protocol.methods import CRON_ADD

    check_locally(document, patch=False)
    job = send_job(ctx.obj, CRON_ADD, lambda doc: doc, document, patch=False)["job"]
    _print_job(job, ctx.obj.wants_json(json_output))


@app.command("update")
def update(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(metavar="ID", help="Job id.")],
    name: NameOpt = None,
    at: AtOpt = None,
    every: EveryOpt = None,
    anchor: AnchorOpt = None,
    cron_expr: CronOpt = None,
    tz: TzOpt = None,
    message: MessageOpt = None,
    system_event: EventOpt = None,
    deliver: DeliverOpt = None,
    channel: ChannelOpt = None,
    to: ToOpt = None,
    model: ModelOpt = None,
    thinking: ThinkingOpt = None,
    timeout: TimeoutOpt = None,
    agent: AgentOpt = None,
    description: DescriptionOpt = None,
    enabled: Annotated[bool, typer.Option("--enabled", help="Enable the job.")] = False,
    disabled: Annotated[bool, typer.Option("--disabled", help="Disable the job.")] = False,
    delete_after_run: Annotated[
        bool | None, typer.Option("--delete-after-run/--keep-after-run", help="One-shot.")
    ] = None,
    from_json: FromJsonOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Change a job (only what you pass); prints its id (the whole job with --json)."""
    if enabled and disabled:
        usage_error("give --enabled or --disabled, not both")
    switch = True if enabled else False if disabled else None
    flags = JobFlags(name, at, every, anchor, cron_expr, tz, message, system_event, deliver,
                     channel, to, model, thinking, timeout, agent, description, switch,
                     delete_after_run)  # fmt: skip
    patch = patch_document(flags, from_json)
    from gsv_core.protocol.methods import CRON_UPDATE

    check_locally(patch, patch=True)
    job_id = _full_id(ctx.obj, job_id)
    job = send_job(ctx.obj, CRON_UPDATE, lambda p: {"id": job_id, "patch": p}, patch, patch=True)[
        "job"
    ]
    _print_job(job, ctx.obj.wants_json(json_output))


def _print_job(job: dict[str, Any], as_json: bool) -> None:
    if as_json:
        output.print_json(job)
    else:
        output.write_text(f"{job['id']}\n")


@app.command("status")
def status(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """The scheduler: on or off, jobs, due and running counts, limits."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CRON_STATUS

    result = call(ctx.obj, CRON_STATUS)
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
        return
    lines = [
        f"scheduler:  {'enabled' if result['enabled'] else 'disabled (cron.enabled)'}",
        f"jobs:       {result['count']} ({result['dueCount']} due, "
        f"{result['runningCount']} running)",
        f"next run:   {output.when(result.get('nextRunAtMs'))}",
        f"limits:     {result['maxJobs']} jobs, {result['maxConcurrentRuns']} runs at once",
    ]
    output.write_text("\n".join(lines) + "\n")


@app.command("list")
def list_jobs(
    ctx: typer.Context,
    show_all: Annotated[bool, typer.Option("--all", help="Include disabled jobs.")] = False,
    agent: AgentOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Jobs, soonest first, with the next run in the job's zone and in UTC."""
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.protocol.methods import CRON_LIST

    params: dict[str, Any] = {"includeDisabled": show_all, "limit": 500}
    if agent:
        params["agentId"] = agent

    async def fetch() -> tuple[dict[str, Any], str]:
        async with gateway_client(ctx.obj) as client:
            return await client.call(CRON_LIST, params), await user_timezone(client)

    result, tz = run(fetch)
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
        return
    columns = ["id", "name", "agent", "schedule", "next run", "next run (UTC)", "last"]
    output.print_table(columns, [job_row(job, tz) for job in result["jobs"]], empty="no jobs")


def job_row(job: dict[str, Any], tz: str) -> list[str]:
    from gsv_core.cron.schedule import UTC
    from gsv_core.cron.schedule import describe_schedule
    from gsv_core.cron.schedule import format_local
    from gsv_core.cron.schedule import schedule_zone

    upcoming = job["state"].get("nextRunAtMs")
    if upcoming is not None:
        local = format_local(upcoming, schedule_zone(job["schedule"], tz))
        utc = format_local(upcoming, UTC)
    else:
        local = utc = "-" if job["enabled"] else "(disabled)"
    last = last_outcome(job["state"])
    name = job["name"] if job["enabled"] else f"{job['name']} (disabled)"
    return [job["id"], name, job["agentId"], describe_schedule(job["schedule"], tz),
            local, utc, last]  # fmt: skip


def last_outcome(state: dict[str, Any]) -> str:
    """The last run as the list shows it: a failure with its reason and retries."""
    if state.get("runningAtMs"):
        return "running"
    last = str(state.get("lastStatus", "-"))
    if last != "error":
        return last
    retries = f" (retry {state['retries']})" if state.get("retries") else ""
    return f"failed{retries}: {state.get('lastError') or 'no reason given'}"


@app.command("remove")
def remove(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(metavar="ID", help="Job id.")],
    json_output: JsonOpt = False,
) -> None:
    """Delete a job and its run history (exit 1 if there is no such job)."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CRON_REMOVE

    job_id = _full_id(ctx.obj, job_id)
    result = call(ctx.obj, CRON_REMOVE, {"id": job_id})
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
    if not result["removed"]:
        output.fail(f"no cron job {job_id!r}")
    if not ctx.obj.wants_json(json_output):
        output.write_text(f"removed {job_id}\n")


@app.command("run")
def run_jobs(
    ctx: typer.Context,
    job_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help="Job id (default: every due job).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Run ID now, due or not.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Run a job (or the due ones) and wait for the outcomes; exit 1 if one failed."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CRON_RUN

    if force and job_id is None:
        usage_error("--force needs a job ID")
    params: dict[str, Any] = {"mode": "force" if force else "due"}
    if job_id is not None:
        params["id"] = job_id = _full_id(ctx.obj, job_id)
    result = call(ctx.obj, CRON_RUN, params, timeout=RUN_TIMEOUT)
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
    else:
        rows = [_result_row(r) for r in result["results"]]
        output.print_table(["job", "status", "took", "summary / error"], rows, empty="nothing ran")
    failed = [r["jobId"] for r in result["results"] if r["status"] == "error"]
    if failed:
        output.fail(f"{len(failed)} run(s) failed: {', '.join(failed)}")
    skipped = [r for r in result["results"] if r["status"] == "skipped"]
    if job_id is not None and skipped:  # the job asked for did not run: say so in the code
        # the gateway names its param (`mode force`); here the flag is the word
        why = str(skipped[0].get("error", "skipped")).replace("use mode force", "use --force")
        output.fail(f"{skipped[0]['jobId']} did not run: {why}")


def _result_row(result: dict[str, Any]) -> list[str]:
    took = f"{result.get('durationMs', 0) / 1000:.1f}s"
    return [result["jobId"], result["status"], took,
            result.get("summary") or result.get("error") or ""]  # fmt: skip


@app.command("runs")
def runs(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Option("--job", help="Only this job's runs.")] = None,
    limit: Annotated[int, typer.Option("-n", "--limit", min=1, max=2000, help="Runs.")] = 20,
    json_output: JsonOpt = False,
) -> None:
    """Run history, newest first."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CRON_RUNS

    params: dict[str, Any] = {"limit": limit}
    if job:
        params["jobId"] = job
    result = call(ctx.obj, CRON_RUNS, params)
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
        return
    rows = [[str(r["id"]), r["jobId"], output.when(r["ts"]), *_result_row(r)[1:],
             r.get("reply") or ""] for r in result["runs"]]  # fmt: skip
    columns = ["run", "job", "when", "status", "took", "summary / error", "reply"]
    output.print_table(columns, rows, empty="no runs yet")


def _full_id(state: CliState, given: str) -> str:
    """A job id from a unique prefix of one (an unknown id is left for the gateway)."""
    from gsv_cli.ids import expand_prefix
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CRON_LIST

    jobs = call(state, CRON_LIST, {"includeDisabled": True, "limit": 500})["jobs"]
    return expand_prefix(given, [job["id"] for job in jobs], "cron job")
