"""One run of a cron job against the agent's sessions, and its real outcome.

* `systemEvent`: the text goes into the agent's main session (`agent:{id}:{mainKey}`), as
  a message in the ongoing conversation.
* `task`: a full turn in a fresh session per run, `agent:{id}:cron:{jobId}:{runId}` (no
  carry-over between runs), with the job's `model` and `thinking` as run
  overrides, stopped when it outlasts `timeoutSeconds` (the original ignored these).

The run's status is its real end (in the original "ok" meant "queued"): `ok` once the
turn finished, with the reply's opening as the summary; `error` with the run's message,
or when a tool the run called could not run (nobody provides it, its node is offline,
it did not answer in time) and no later call of that tool in the run worked: the model
may have replied "I could not do it", but the job's work was not done (docs/cron.md).

Delivery: a system event always answers in the agent's last active
channel conversation; a task delivers only when asked (`deliver: true`, or a `channel` /
`to`). The target: `channel` + `to` -> a DM to `to` on that channel; only `to` -> a DM to
`to` on the last active channel; otherwise the last active conversation itself. The run
then carries that as its channel context (the outbox sends the reply there) and the agent
is told its reply is delivered. With no target (nobody has written from a channel yet)
the reply reaches the clients only, through the session's chat events.

The sessions are reached through the small `CronSessions` protocol (the gateway's
session manager fits it), so this layer never imports the agent.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from typing import Any
from typing import Protocol

from gsv_core.cron.jobs import CronJob
from gsv_core.cron.schedule import lenient_zone
from gsv_core.errors import GsvError
from gsv_core.protocol.messages import text_of
from gsv_core.routing import RoutingSettings
from gsv_core.routing import cron_session_key
from gsv_core.routing import main_session_key

# how long a run may take when the job sets no timeoutSeconds
DEFAULT_TIMEOUT_SECONDS = 600.0
SUMMARY_CHARS = 200
STOP_REASON = "cron timeout"


class SentRun(Protocol):
    @property
    def run_id(self) -> str: ...


class CronActor(Protocol):
    """What a run needs of a session actor (gsv_core.agent.session.SessionActor)."""

    async def send(
        self,
        text: str,
        run_id: str | None = None,
        *,
        overrides: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> SentRun: ...

    def run_outcome(self, run_id: str) -> asyncio.Future[dict[str, Any]]: ...

    def unrecovered_tools(self, run_id: str) -> dict[str, str]: ...

    async def stop(self, reason: str = "stop") -> object: ...


class CronSessions(Protocol):
    """What a run needs of the sessions (gsv_core.agent.manager.SessionManager)."""

    def routing(self) -> RoutingSettings: ...

    async def actor(self, key: str) -> CronActor: ...


@dataclass(frozen=True)
class RunOutcome:
    status: str  # ok | error | skipped | budget (held back by a budget: runs later)
    summary: str | None = None
    error: str | None = None
    # where the reply went: `delivered to telegram:42`, or `kept in <session>` and why
    reply: str | None = None


def run_session_key(job: CronJob, run_id: str, routing: RoutingSettings) -> str:
    """Where a run happens: the main session for a system event, a fresh one for a task."""
    if job.spec["mode"] == "systemEvent":
        return main_session_key(job.agent_id, routing)
    return cron_session_key(job.agent_id, job.id, run_id)


def cron_message(job: CronJob, now_ms: int, tz_name: str) -> str:
    """The text the agent reads: `[cron "name" · Friday, February 13, 2026 — 6:00 PM CST]
    text` (the time in userTimezone)."""
    moment = dt.datetime.fromtimestamp(now_ms / 1000, lenient_zone(tz_name))
    clock = moment.strftime("%I:%M %p").lstrip("0")
    when = f"{moment:%A, %B} {moment.day}, {moment.year} — {clock} {moment:%Z}"
    body = job.spec["text"] if job.spec["mode"] == "systemEvent" else job.spec["message"]
    return f'[cron "{job.name}" · {when}] {body}'


def run_overrides(spec: dict[str, Any]) -> dict[str, Any]:
    """A task's `model` and `thinking` as the session run's overrides."""
    overrides: dict[str, Any] = {}
    model = spec.get("model")
    if isinstance(model, str) and "/" in model:
        provider, model_id = model.split("/", 1)
        overrides["model"] = {"provider": provider, "id": model_id}
    if spec.get("thinking"):
        overrides["thinkLevel"] = spec["thinking"]
    return overrides


def run_context(job: CronJob, run_id: str, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """What travels with the run: which job, where its reply goes and, when it is delivered,
    the channel context the outbox routes it by (`last`: the agent's last active channel
    conversation, `{channel, accountId, peer}`, if any)."""
    spec = job.spec
    if spec["mode"] == "systemEvent":
        deliver: dict[str, Any] = {"deliver": True}
    else:
        explicit = spec.get("channel") is not None or spec.get("to") is not None
        deliver = {"deliver": bool(spec.get("deliver", explicit))}
        for key in ("channel", "to", "bestEffortDeliver"):
            if spec.get(key) is not None:
                deliver[key] = spec[key]
    cron = {"jobId": job.id, "jobName": job.name, "runId": run_id}
    context: dict[str, Any] = {"cron": cron, "deliver": deliver}
    target = delivery_target(spec, last) if deliver["deliver"] else None
    if target is not None:
        context.update(target, agentId=job.agent_id)
    return context


def delivery_target(spec: dict[str, Any], last: dict[str, Any] | None) -> dict[str, Any] | None:
    """`{channel, accountId, peer}` the reply goes to, or None when there is nowhere."""
    channel, to = spec.get("channel"), spec.get("to")
    if channel and to:
        same = last is not None and last.get("channel") == channel
        account = str(last.get("accountId") or "default") if same and last else "default"
        return {
            "channel": str(channel),
            "accountId": account,
            "peer": {"kind": "dm", "id": str(to)},
        }
    if last is None or not last.get("channel"):
        return None
    peer = {"kind": "dm", "id": str(to)} if to else dict(last.get("peer") or {})
    account = str(last.get("accountId") or "default")
    return {"channel": str(last["channel"]), "accountId": account, "peer": peer}


def delivery_note(context: dict[str, Any]) -> str:
    """Told to the agent when its reply is delivered for it (so it does not send it twice)."""
    if "channel" not in context:
        return ""
    where = f"{context['channel']}:{context['peer'].get('id', '?')}"
    return (
        f"\n[Your response will be delivered automatically to {where} — reply normally, "
        "do NOT use gsv__Message for this.]"
    )


def reply_went(context: dict[str, Any], key: str) -> str:
    """Where a run's reply goes, in words (`gsv cron runs` shows it)."""
    if "channel" in context:
        return f"delivered to {context['channel']}:{context['peer'].get('id', '?')}"
    if context.get("deliver", {}).get("deliver"):
        return f"kept in {key}: no channel conversation to deliver to yet"
    return f"kept in {key} (not delivered: give the job --deliver, or --channel and --to)"


def summary_of(message: dict[str, Any]) -> str:
    text = " ".join(text_of(message).split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"


async def execute(
    job: CronJob,
    sessions: CronSessions,
    key: str,
    run_id: str,
    message: str,
    last: dict[str, Any] | None = None,
) -> RunOutcome:
    """Send the job's message into session `key` and wait for the run's end (`last`: the
    agent's last active channel conversation, for delivery)."""
    actor = await sessions.actor(key)
    overrides = run_overrides(job.spec) if job.spec["mode"] == "task" else {}
    context = run_context(job, run_id, last)
    message += delivery_note(context)
    sent = await actor.send(message, run_id, overrides=overrides, context=context)
    outcome = actor.run_outcome(sent.run_id)  # asked at once: the run cannot have ended yet
    timeout = float(job.spec.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
    try:
        async with asyncio.timeout(timeout):
            final = await asyncio.shield(outcome)
    except TimeoutError:
        return await _timed_out(job, actor, outcome, timeout, key)
    except GsvError as exc:
        return RunOutcome("error", error=exc.message)
    failed = actor.unrecovered_tools(sent.run_id)
    went = reply_went(context, key)
    if failed:
        return RunOutcome("error", summary_of(final), tools_failed(failed), went)
    return RunOutcome("ok", summary=summary_of(final), reply=went)


def tools_failed(failed: dict[str, str]) -> str:
    """The reason of a run whose tools could not run: `tools failed: X (why); ...`."""
    return "tools failed: " + "; ".join(f"{name} ({why})" for name, why in failed.items())


async def _timed_out(
    job: CronJob,
    actor: CronActor,
    outcome: asyncio.Future[dict[str, Any]],
    timeout: float,
    key: str,
) -> RunOutcome:
    if job.spec["mode"] == "systemEvent":
        # the main session is the user's conversation: it is never stopped for a job
        outcome.add_done_callback(_consume)
        return RunOutcome(
            "error", error=f"no reply within {timeout:g}s; the message stays in {key}"
        )
    await actor.stop(STOP_REASON)
    outcome.add_done_callback(_consume)
    return RunOutcome("error", error=f"timed out after {timeout:g}s; the run was stopped")


def _consume(future: asyncio.Future[dict[str, Any]]) -> None:
    """Read a late outcome so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()
