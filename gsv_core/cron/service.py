"""CronService: the jobs, the timer that runs them when due, and the operations behind
`cron.*` and `gsv__Cron`.

The timer is one asyncio task that sleeps until the earliest due job (at most a minute, so
a clock jump or a re-enabled `cron.enabled` is noticed) or until something changes (`wake`),
then starts every due job there is a free slot for (`cron.maxConcurrentRuns`). A job still
due when all slots are busy starts as soon as a run ends.

Restarts: jobs and their next runs live in the store. A job whose time passed while the
gateway was down is due at start-up and runs once; its next run is then computed from
that moment, so however many occurrences were missed, it runs only once for them. A run
cut short by a shutdown is recorded at the next start as an `error`: a recurring job waits
for its next occurrence, a one-shot job is retried like any failed one.

Per-job outcome: a one-shot (`at`) job that ran well is disabled, or removed when
`deleteAfterRun`; one that failed is tried again a few times, then kept disabled and
listed with its error (gsv_core.cron.retry, docs/cron.md). A recurring job's next run is
computed after the run from the schedule (anchored intervals stay on their grid). The
history of each job is trimmed to `cron.maxRunsPerJobHistory`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gsv_core.cron import execution
from gsv_core.cron import retry
from gsv_core.cron.execution import CronSessions
from gsv_core.cron.execution import RunOutcome
from gsv_core.cron.jobs import CronJob
from gsv_core.cron.jobs import new_job
from gsv_core.cron.jobs import patched_job
from gsv_core.cron.schedule import next_run
from gsv_core.errors import Conflict
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import RateLimited
from gsv_core.routing import normalise_agent_id
from gsv_core.storage.cron import CronStore
from gsv_core.timer import MAX_SLEEP_SECONDS
from gsv_core.timer import Timer
from gsv_core.timer import seconds_until

log = logging.getLogger(__name__)

# an `at` time this far in the past is still accepted (it runs at once): the clock moved
# on while the request travelled
AT_GRACE_MS = 60_000
INTERRUPTED = "interrupted: the gateway stopped during this run"
_DEFAULTS = {"enabled": True, "maxJobs": 200, "maxRunsPerJobHistory": 200, "maxConcurrentRuns": 4,
             "catchUpGraceMs": 60_000}  # fmt: skip
CATCH_UP_POLL_S = 1.0  # how often held catch-up jobs look again whether the nodes are back


@dataclass
class Running:
    """A run in flight: its task and the session it happens in."""

    job_id: str
    run_id: str
    session_key: str
    task: asyncio.Task[dict[str, Any]]


# agent id -> its last active channel conversation `{channel, accountId, peer}`, or None
LastChannel = Callable[[str], dict[str, Any] | None]
# a job about to run -> why background work may not spend now (a budget), or None
BudgetCheck = Callable[[CronJob], Awaitable[str | None]]
BUDGET = "budget"  # a run's status when a budget held it back
# a one-shot job held back by a budget looks again this often (the owner may raise it)
BUDGET_RECHECK_MS = 15 * 60_000


class CronService:
    def __init__(
        self,
        store: CronStore,
        sessions: CronSessions,
        config: Callable[[], Mapping[str, Any]],
        now_ms: Callable[[], int],
        last_channel: LastChannel | None = None,
        budget: BudgetCheck | None = None,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self._config = config
        self._now = now_ms
        # the agent's last active channel conversation (delivery target); none: clients only
        self._last_channel = last_channel or (lambda _agent_id: None)
        self._budget = budget
        self._jobs: dict[str, CronJob] = {}
        self._running: dict[str, Running] = {}
        self._lock = asyncio.Lock()  # job changes and their writes happen one at a time
        self._timer = Timer("cron", self._tick)
        # catch-up after a restart: jobs due before `_started` wait until `_world_back()`
        # or the grace period ends, so their node tools do not fail for want of a node
        self._started: int | None = None
        self._world_back: Callable[[], bool] = lambda: True

    # -- settings -----------------------------------------------------------------------
    def setting(self, name: str) -> Any:
        section = self._config().get("cron")
        value = section.get(name) if isinstance(section, Mapping) else None
        return _DEFAULTS[name] if value is None else value

    @property
    def enabled(self) -> bool:
        return bool(self.setting("enabled"))

    def user_tz(self) -> str:
        tz = self._config().get("userTimezone")
        return tz if isinstance(tz, str) and tz else "UTC"

    # -- life cycle -----------------------------------------------------------------------
    async def load(self) -> None:
        """Read the jobs; close runs a shutdown interrupted (recorded as errors)."""
        for data in await self.store.jobs():
            job = CronJob.from_wire(data)
            self._jobs[job.id] = job
            if job.state.running_at_ms is not None:
                log.warning("cron job %s was interrupted by a restart", job.id)
                outcome = RunOutcome("error", error=INTERRUPTED)
                await self._record(job, outcome, job.state.running_at_ms, None)

    def start(self, world_back: Callable[[], bool] | None = None) -> None:
        """Start the timer (after the sessions recovered). Jobs that fell due while the
        gateway was down run once `world_back()` (the nodes connected before the stop are
        back) or after `cron.catchUpGraceMs`, whichever comes first."""
        self._started = self._now()
        if world_back is not None:
            self._world_back = world_back
        self._timer.start()

    async def stop(self) -> None:
        """Stop the timer and cancel runs in flight (recorded as interrupted next start)."""
        await self._timer.stop(r.task for r in self._running.values())

    def wake(self) -> None:
        """Look at the jobs again now (something changed, or the clock moved)."""
        self._timer.wake()

    def _tick(self) -> float:
        """Start what is due; return the seconds until the next job is due."""
        if not self.enabled:
            return MAX_SLEEP_SECONDS
        now = self._now()
        for job in self._due(now)[: self._free_slots()]:
            self._launch(job)
        waiting = [
            job.state.next_run_at_ms
            for job in self._jobs.values()
            if job.enabled and job.state.next_run_at_ms is not None and job.id not in self._running
        ]
        held = self._holding_catch_up(now) and any(
            self._is_catch_up(j) for j in self._jobs.values() if j.id not in self._running
        )
        if held:  # look again soon: a node may be back
            return CATCH_UP_POLL_S
        return seconds_until(waiting, now)

    # -- reading --------------------------------------------------------------------------
    def get(self, job_id: str) -> CronJob:
        job = self._jobs.get(job_id)
        if job is None:
            raise NotFound(f"unknown cron job id: {job_id}")
        return job

    def jobs(self, agent_id: str | None = None, include_disabled: bool = True) -> list[CronJob]:
        """Jobs with a next run first (soonest first), then the rest by creation."""
        agent = normalise_agent_id(agent_id) if agent_id else None
        chosen = [
            job
            for job in self._jobs.values()
            if (agent is None or job.agent_id == agent)
            and (include_disabled or job.enabled or retry.needs_attention(job))
        ]
        return sorted(chosen, key=_list_order)

    def status(self, agent_id: str | None = None) -> dict[str, Any]:
        now = self._now()
        jobs = self.jobs(agent_id)
        upcoming = [j.state.next_run_at_ms for j in jobs if j.enabled and j.state.next_run_at_ms]
        result: dict[str, Any] = {
            "enabled": self.enabled,
            "count": len(jobs),
            "dueCount": sum(1 for j in jobs if _is_due(j, now) and j.id not in self._running),
            "runningCount": sum(1 for j in jobs if j.id in self._running),
            "maxJobs": int(self.setting("maxJobs")),
            "maxConcurrentRuns": int(self.setting("maxConcurrentRuns")),
        }
        if upcoming:
            result["nextRunAtMs"] = min(upcoming)
        return result

    async def runs(
        self, job_id: str | None, offset: int = 0, limit: int = 200
    ) -> tuple[list[dict[str, Any]], int]:
        runs, total = await self.store.runs(job_id, offset, limit)
        if job_id is not None and total == 0 and job_id not in self._jobs:
            raise NotFound(f"unknown cron job id: {job_id}")
        return runs, total

    def running_session(self, job_id: str) -> str | None:
        running = self._running.get(job_id)
        return running.session_key if running else None

    # -- changing -------------------------------------------------------------------------
    async def add(self, doc: Mapping[str, Any]) -> CronJob:
        """Create a job from a CronJobCreate document (canonical schedule)."""
        async with self._lock:
            limit = int(self.setting("maxJobs"))
            if len(self._jobs) >= limit:
                raise Conflict(
                    f"cron job limit reached: cron.maxJobs is {limit}; remove a job "
                    "(gsv cron remove ID) or raise the limit (gsv config set cron.maxJobs N)"
                )
            now = self._now()
            job = new_job(doc, str(uuid.uuid4()), now)
            _anchor_interval(job, now)
            if job.enabled:
                job.state.next_run_at_ms = self._first_run(job, now, "schedule")
            await self.store.save_job(job.to_wire())
            self._jobs[job.id] = job
        self.wake()
        return job

    async def update(self, job_id: str, patch: Mapping[str, Any]) -> CronJob:
        """Apply a CronJobPatch; the next run is recomputed when the schedule or `enabled`
        changed (a disabled job has none)."""
        async with self._lock:
            current = self.get(job_id)
            now = self._now()
            job = patched_job(current, patch, now)
            rescheduled = job.schedule != current.schedule or job.enabled != current.enabled
            if job.schedule != current.schedule:
                _anchor_interval(job, now)
            if not job.enabled:
                job.state.next_run_at_ms = None
            elif rescheduled or job.state.next_run_at_ms is None:
                job.state.next_run_at_ms = self._first_run(job, now, "patch.schedule")
            await self.store.save_job(job.to_wire())
            self._jobs[job.id] = job
        self.wake()
        return job

    async def remove(self, job_id: str) -> bool:
        """Delete a job and its history; False when there was no such job. A run in flight
        finishes but is not recorded."""
        async with self._lock:
            existed = self._jobs.pop(job_id, None) is not None
            removed = await self.store.delete_job(job_id, with_runs=True)
        self.wake()
        return existed or removed

    def _first_run(self, job: CronJob, now: int, where: str) -> int | None:
        """The next run of a job just created, enabled or rescheduled. A one-shot time may
        lie a little in the past (it runs at once); further back is refused."""
        if job.one_shot:
            at: int = job.schedule["atMs"]
            if at < now - AT_GRACE_MS:
                when = dt.datetime.fromtimestamp(at / 1000, dt.UTC).isoformat()
                raise InvalidParams(f"{where}.atMs is in the past ({when}): give a later time")
            return at
        return next_run(job.schedule, now, self.user_tz())

    # -- running --------------------------------------------------------------------------
    async def run(self, job_id: str | None = None, mode: str = "due") -> list[dict[str, Any]]:
        """cron.run: start the chosen jobs and wait for their outcomes (CronRunResult)."""
        results, started = await self.trigger(job_id, mode)
        if started:
            await asyncio.wait([r.task for r in started])  # not cancelled with the caller
            results += [r.task.result() for r in started]
        if mode == "force":  # as the original's summary did, it names where the run happened
            results = [_naming_session(result) for result in results]
        return results

    async def trigger(
        self, job_id: str | None = None, mode: str = "due"
    ) -> tuple[list[dict[str, Any]], list[Running]]:
        """Start runs without waiting: (results of jobs not started, the runs started).
        Without an id, mode `due` starts the due jobs that fit in the free slots."""
        if mode not in ("due", "force"):
            raise InvalidParams(f"mode must be due or force (got {mode!r})")
        if job_id is None:
            if mode == "force":
                raise InvalidParams("cron.run with mode=force requires id")
            if not self.enabled:
                return [], []
            due = self._due(self._now())[: self._free_slots()]
            return [], [self._launch(job) for job in due]
        job = self.get(job_id)
        if mode == "force" and job.id in self._running:
            return [], [self._running[job.id]]  # the run already going is the one reported
        refusal = await self._refusal(job, mode)
        if refusal is not None:
            return [refusal], []
        if self._free_slots() <= 0:
            limit = int(self.setting("maxConcurrentRuns"))
            raise RateLimited(
                f"{limit} cron runs are in progress (cron.maxConcurrentRuns = {limit}); "
                "try again when one has finished"
            )
        return [], [self._launch(job)]

    async def _refusal(self, job: CronJob, mode: str) -> dict[str, Any] | None:
        """Why a job asked for by id does not run now (None: it runs)."""
        if job.id in self._running:
            return _skipped(job, "already running")
        if mode == "force":
            job.state.retries = 0  # run again by hand: a fresh set of retries
            return None
        if not job.enabled or not self.enabled:
            reason = "job disabled" if not job.enabled else "cron scheduler disabled"
            async with self._lock:
                skipped = RunOutcome("skipped", error=reason)
                return await self._record(job, skipped, self._now(), None)
        if not _is_due(job, self._now()):
            return _skipped(job, "not due yet (use mode force to run it now)")
        return None

    def _due(self, now: int) -> list[CronJob]:
        due = [j for j in self._jobs.values() if _is_due(j, now) and j.id not in self._running]
        if self._holding_catch_up(now):
            due = [j for j in due if not self._is_catch_up(j)]
        return sorted(due, key=lambda j: (j.state.next_run_at_ms, j.created_at_ms))

    def _is_catch_up(self, job: CronJob) -> bool:
        at = job.state.next_run_at_ms
        return self._started is not None and at is not None and at < self._started

    def _holding_catch_up(self, now: int) -> bool:
        if self._started is None:
            return False
        grace_over = now >= self._started + int(self.setting("catchUpGraceMs"))
        return not grace_over and not self._world_back()

    def _free_slots(self) -> int:
        return int(self.setting("maxConcurrentRuns")) - len(self._running)

    def _launch(self, job: CronJob) -> Running:
        """Start a run now (slots are checked by the caller, synchronously)."""
        run_id = uuid.uuid4().hex
        started = self._now()
        job.state.running_at_ms = started
        job.state.last_error = None
        key = execution.run_session_key(job, run_id, self.sessions.routing())
        task = asyncio.create_task(self._run_job(job, key, run_id, started))
        running = Running(job.id, run_id, key, task)
        self._running[job.id] = running
        task.add_done_callback(lambda _: self._ended(job.id, running))
        return running

    def _ended(self, job_id: str, running: Running) -> None:
        if self._running.get(job_id) is running:
            del self._running[job_id]
        self.wake()

    async def _run_job(self, job: CronJob, key: str, run_id: str, started: int) -> dict[str, Any]:
        async with self._lock:
            current = self._jobs.get(job.id)  # an update may have replaced the object
            if current is not None:
                await self.store.save_job(current.to_wire())  # runningAtMs: a restart knows
        message = execution.cron_message(job, started, self.user_tz())
        try:
            held = await self._budget(job) if self._budget is not None else None
            last = self._last_channel(job.agent_id)
            if held is not None:
                outcome = RunOutcome(BUDGET, error=held)
            else:
                outcome = await execution.execute(job, self.sessions, key, run_id, message, last)
        except asyncio.CancelledError:
            raise
        except GsvError as exc:
            outcome = RunOutcome("error", error=exc.message)
        except Exception:
            log.exception("cron job %s failed", job.id)
            outcome = RunOutcome("error", error="internal error (see the gateway log)")
        async with self._lock:
            current = self._jobs.get(job.id)
            if current is None:  # removed while it ran
                return {"jobId": job.id, **_outcome_fields(outcome), "sessionKey": key}
            return await self._record(current, outcome, started, key)

    async def _record(
        self, job: CronJob, outcome: RunOutcome, started: int, key: str | None
    ) -> dict[str, Any]:
        """Store a run's end (lock held): the job's state and a history entry."""
        now = self._now()
        state = job.state
        repeated_hold = outcome.status == BUDGET and state.last_status == BUDGET
        state.running_at_ms = None
        state.last_run_at_ms = started
        state.last_status = outcome.status
        state.last_error = outcome.error
        state.last_duration_ms = max(0, now - started)
        deleted = False
        if outcome.status == BUDGET:  # nothing is lost: it runs when spending is allowed
            state.next_run_at_ms = (now + BUDGET_RECHECK_MS if job.one_shot
                                    else next_run(job.schedule, now, self.user_tz()))  # fmt: skip
        elif outcome.status != "skipped":
            if job.one_shot:
                deleted = _after_one_shot(job, outcome, now)
            elif job.enabled:
                state.next_run_at_ms = next_run(job.schedule, now, self.user_tz())
        if deleted:
            self._jobs.pop(job.id, None)
            await self.store.delete_job(job.id, with_runs=False)
        else:
            await self.store.save_job(job.to_wire())
        result: dict[str, Any] = {
            "jobId": job.id,
            **_outcome_fields(outcome),
            "durationMs": state.last_duration_ms,
        }
        if state.next_run_at_ms is not None:
            result["nextRunAtMs"] = state.next_run_at_ms
        if key is not None:
            result["sessionKey"] = key
        if not repeated_hold:  # one history entry per hold, not one per look
            run = {"ts": started, **result}
            await self.store.append_run(run, int(self.setting("maxRunsPerJobHistory")))
        return result


def _after_one_shot(job: CronJob, outcome: RunOutcome, now: int) -> bool:
    """A one-shot job after a run: done (deleted when asked: returns True) after a
    success; after a failure tried again later, or kept disabled with its error once the
    retries are spent (gsv_core.cron.retry)."""
    state = job.state
    if outcome.status == "ok":
        state.retries = 0
        job.enabled, state.next_run_at_ms = False, None
        return job.delete_after_run
    again = retry.retry_at(job, now)
    state.retries += 1
    if again is None:
        job.enabled, state.next_run_at_ms = False, None
        state.last_error = retry.gave_up(outcome.error)
    else:
        job.enabled, state.next_run_at_ms = True, again
    return False


def _is_due(job: CronJob, now: int) -> bool:
    at = job.state.next_run_at_ms
    return job.enabled and at is not None and at <= now


def _list_order(job: CronJob) -> tuple[int, int, int]:
    at = job.state.next_run_at_ms
    return (0 if at is not None else 1, at or 0, job.created_at_ms)


def _anchor_interval(job: CronJob, now: int) -> None:
    """An interval without an anchor starts now: storing that keeps runs on one grid."""
    if job.schedule["kind"] == "every" and job.schedule.get("anchorMs") is None:
        job.schedule = {**job.schedule, "anchorMs": now}


def _outcome_fields(outcome: RunOutcome) -> dict[str, Any]:
    fields: dict[str, Any] = {"status": outcome.status}
    if outcome.error is not None:
        fields["error"] = outcome.error
    if outcome.summary is not None:
        fields["summary"] = outcome.summary
    if outcome.reply is not None:
        fields["reply"] = outcome.reply
    return fields


def _naming_session(result: dict[str, Any]) -> dict[str, Any]:
    key = result.get("sessionKey")
    if not key:
        return result
    summary = result.get("summary")
    return {**result, "summary": f"ran in {key}: {summary}" if summary else f"ran in {key}"}


def _skipped(job: CronJob, reason: str) -> dict[str, Any]:
    return {"jobId": job.id, "status": "skipped", "error": reason, "durationMs": 0}
