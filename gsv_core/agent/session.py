"""The session actor: one per canonical session key. It owns the session's queue and its
one run at a time, and serialises everything that touches the
session's history (kept by `SessionHistory`; compaction and reset have their modules).

State changes (a message arriving, a run ending, /stop, reset) take the actor's lock, so
they happen one at a time and in order. A message is on disk before `send()` returns:
either as the first message of a new run or as a queued item. Runs are asyncio tasks;
each run is checked by identity when it ends, so a stopped run can never close the next
one.

The actor lives as long as the gateway (the manager never drops it: a caller may hold it
across awaits), but its cached history may be released while it is `idle`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gsv_core.agent import model_choice
from gsv_core.agent import session_compaction
from gsv_core.agent import session_reset
from gsv_core.agent.ack_first import AckFirst
from gsv_core.agent.history import SessionHistory
from gsv_core.agent.host import AgentHost
from gsv_core.agent.model_view import ModelView
from gsv_core.agent.run import RunFailed
from gsv_core.agent.run import RunLoop
from gsv_core.agent.run import RunState
from gsv_core.agent.token_estimates import TokenEstimates
from gsv_core.errors import Conflict
from gsv_core.errors import GsvError
from gsv_core.protocol import events
from gsv_core.protocol.messages import ImageBlock
from gsv_core.protocol.messages import empty_usage
from gsv_core.protocol.messages import tool_calls
from gsv_core.protocol.messages import user_message
from gsv_core.providers.base import Provider
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.sessions import SessionStore
from gsv_core.usage.ledger import run_source

log = logging.getLogger(__name__)

CANCELLED_BY_USER = "Run cancelled by user"
INTERRUPTED = "The gateway restarted while this run was in progress; it was stopped."
EXEC_EVENT_PREFIX = "System event: async_exec_completion\n"
MAX_UNRECOVERED_KEPT = 64


@dataclass(frozen=True)
class SendResult:
    run_id: str
    queued: bool
    position: int = 0


@dataclass(frozen=True)
class StopResult:
    was_running: bool
    run_id: str | None = None
    tools_cancelled: int = 0


class SessionActor:
    def __init__(
        self,
        record: SessionRecord,
        store: SessionStore,
        host: AgentHost,
        *,
        is_main: bool,
        on_history_load: Callable[[SessionActor], None] | None = None,
        acks: AckFirst | None = None,
        fresh: bool = False,
    ) -> None:
        self.record = record
        self.store = store
        self.host = host
        self.is_main = is_main
        told = on_history_load
        self._history = SessionHistory(
            record, store, host, on_load=(lambda: told(self)) if told is not None else None,
            fresh=fresh,
        )  # fmt: skip
        self._acks = acks or AckFirst()
        # the history's token estimate, kept between its model calls (token_estimates.py)
        self.token_estimates = TokenEstimates()
        # what each message becomes for the model, kept likewise (model_view.py)
        self.model_view = ModelView()
        self._run: RunState | None = None
        self._task: asyncio.Task[None] | None = None  # the latest run's, until it ended
        self._lock = asyncio.Lock()
        self.queue_size = 0
        # True once the store said the queue is empty, until this actor (its only writer)
        # queues again: a run's end then need not read the queue (it is, most of the time)
        self._queue_empty = False
        self._outcomes: dict[str, asyncio.Future[dict[str, Any]]] = {}
        # run id -> tools that could not run, kept for whoever awaited the run's outcome
        self._unrecovered: dict[str, dict[str, str]] = {}

    @property
    def key(self) -> str:
        return self.record.session_key

    @property
    def agent_id(self) -> str:
        return self.record.agent_id

    @property
    def processing(self) -> bool:
        return self._run is not None

    @property
    def current_run_id(self) -> str | None:
        return self._run.run_id if self._run else None

    @property
    def idle(self) -> bool:
        """Nothing is using the history: no run (nor its task closing its books), nothing
        queued, no caller waiting for a run's outcome, the lock free (nobody between the
        awaits of a state change)."""
        return (
            self._run is None
            and self.running_task() is None
            and self.queue_size == 0
            and not self._outcomes
            and not self._lock.locked()
        )

    def release_history(self) -> bool:
        """Drop the cached history if idle (the next use reloads it from the store); False
        when busy. Tools that could not run (`unrecovered_tools`) stay: they are not
        history."""
        if not self.idle:
            return False
        self._history.release()
        self.token_estimates.forget()
        self.model_view.forget()
        return True

    @property
    def history_cached(self) -> list[dict[str, Any]] | None:
        """The history if it is in memory now, else None (reading it would load it)."""
        return self._history.cached

    def running_task(self) -> asyncio.Task[None] | None:
        """The task of the latest run until it has ended, closing its books included (it
        may outlive `_run`: it clears that, then reads the queue)."""
        task = self._task
        return task if task is not None and not task.done() else None

    def run_outcome(self, run_id: str) -> asyncio.Future[dict[str, Any]]:
        """A future for the end of run `run_id` (started or queued): resolves to its final
        assistant message, or fails with RunFailed. Ask before the run can end."""
        future = self._outcomes.get(run_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._outcomes[run_id] = future
        return future

    def unrecovered_tools(self, run_id: str) -> dict[str, str]:
        """Tools of an ended run (whose outcome was awaited) that could not run and were
        not made to work later in the run: tool name -> why (read once)."""
        return self._unrecovered.pop(run_id, {})

    def _settle(
        self,
        run_id: str,
        message: dict[str, Any] | None,
        error: str | None = None,
        unrecovered: dict[str, str] | None = None,
    ) -> None:
        future = self._outcomes.pop(run_id, None)
        if future is None or future.done():
            return
        if unrecovered:
            while len(self._unrecovered) >= MAX_UNRECOVERED_KEPT:  # readers that never read
                self._unrecovered.pop(next(iter(self._unrecovered)))
            self._unrecovered[run_id] = dict(unrecovered)
        if error is not None:
            future.set_exception(RunFailed(error))
        else:
            future.set_result(message or {})

    # -- history ------------------------------------------------------------------------
    async def history(self) -> list[dict[str, Any]]:
        return await self._history.messages()

    @property
    def transcript(self) -> SessionHistory:
        return self._history

    async def take_turn(self, hold: bool = True) -> None:
        """Before each piece of run work: let messages being acknowledged go first."""
        await self._acks.turn(hold)

    # -- events -------------------------------------------------------------------------
    def emit(self, event: str, run: RunState, **fields: Any) -> None:
        payload: dict[str, Any] = {"runId": run.run_id, "sessionKey": self.key, **fields}
        if run.context:
            payload["channelContext"] = run.context
        self.host.emit(event, payload)

    def emit_chat(self, run: RunState, state: str, **fields: Any) -> None:
        self.emit(events.CHAT, run, state=state, **fields)

    # -- model choice -------------------------------------------------------------------
    def effective_model(self, run: RunState | None = None) -> tuple[str, str]:
        """The model of a run (gsv_core.agent.model_choice.effective_model)."""
        override = run.overrides.get("model") if run else None
        return model_choice.effective_model(self.record, self.host.config(), override)

    def next_model(self) -> tuple[str, str]:
        """The model the next message will use unless it names one."""
        return model_choice.next_model(self.record, self.host.config())

    # -- messages in --------------------------------------------------------------------
    async def send(
        self,
        text: str,
        run_id: str | None = None,
        *,
        overrides: dict[str, Any] | None = None,
        images: list[ImageBlock] | None = None,
        context: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> SendResult:
        """Store a user message and start a run with it, or queue it behind the current run.
        `source` names who sent it in the usage ledger (default: read from `context`)."""
        run_id = run_id or str(uuid.uuid4())
        source = source or run_source(context)
        async with self._lock:
            now = self.host.now_ms()
            message: dict[str, Any] = {**user_message(text, now, images), "runId": run_id}
            merged = {**(self.record.pending_overrides or {}), **(overrides or {})}
            self.record.pending_overrides = None
            self.record.last_active_at = now
            if self._run is None:
                await session_reset.reset_if_due(self._history, now)
                self.record.updated_at = now
                history = await self.history()  # load first: the store is about to hold it
                await self.store.start_run(self.record, run_id, message, now)
                history.append(message)
                self._start(RunState(run_id, merged, context, source=source))
                return SendResult(run_id, queued=False)
            item = {"message": message, "overrides": merged, "context": context, "source": source}
            self._queue_empty = False
            position = await self.store.enqueue(self.record, run_id, item, now)
            self.queue_size = position
            return SendResult(run_id, queued=True, position=position)

    async def ingest_exec(
        self, completion: dict[str, Any], context: dict[str, Any] | None = None
    ) -> None:
        """A background node process ended: tell the agent (and wake it if idle). The run
        it answers goes where the starting run came from (a channel), not where the last run
        came from."""
        text = EXEC_EVENT_PREFIX + json.dumps(completion, ensure_ascii=False)
        await self.send(text, context=context)

    # -- runs ---------------------------------------------------------------------------
    def _start(self, run: RunState) -> None:
        self._run = run
        run.task = self._task = asyncio.create_task(
            self._execute(run), name=f"gsv-run-{run.run_id}"
        )

    async def _execute(self, run: RunState) -> None:
        try:
            # the caller's acknowledgement (and any other in progress) goes out first
            await self.take_turn()
            run.final = dict(await RunLoop(self, run).execute())
        except asyncio.CancelledError:
            if run.cancel_reason is None:
                raise  # the gateway is shutting down: the run stays open for recovery
            return  # stopped or reset: whoever cancelled closes the run
        except GsvError as exc:
            run.error = exc.message
        except Exception:
            log.exception("run %s of %s failed", run.run_id, self.key)
            run.error = "internal error (see the gateway log)"
        run.settled = True
        try:
            async with self._lock:
                if self._run is run:
                    await self._finish(run)
        except asyncio.CancelledError:
            if run.cancel_reason is None:
                raise

    async def _finish(
        self, run: RunState, note: str | None = None, start_next: bool = True
    ) -> None:
        """Close the current run (lock held): answer dangling tool calls with `note`, drop
        the run's row, then tell clients how it ended, then start the next queued message.
        Clients hear `final` only once the session is idle again."""
        history = await self.history()
        closing = self._history.dangling_results(note) if note else []
        if closing or not run.closed_in_store:  # else its final reply's write closed it
            await self.store.finish_run(self.record, run.run_id, closing)
        history.extend(closing)
        self._run = None
        if run.error is not None:
            self.emit_chat(run, "error", error=run.error)
            self._settle(run.run_id, None, run.error)
        else:
            self.emit_chat(run, "final", message=run.final, usage=run.usage)
            self._settle(run.run_id, run.final, unrecovered=run.unrecovered_tools)
        if start_next:
            await self._start_next()

    async def _start_next(self) -> None:
        if self._queue_empty:
            return
        queued = await self.store.queue(self.key)
        self.queue_size = len(queued)
        if not queued:
            self._queue_empty = True
            return
        item = queued[0]
        now = self.host.now_ms()
        self.record.updated_at = now
        history = await self.history()
        if item.item.get("resume"):
            await self.store.take_queued(self.record, item.seq, None, now)
        else:
            message = {**item.item["message"], "timestamp": now}
            await self.store.take_queued(self.record, item.seq, message, now)
            history.append(message)
        self.queue_size -= 1
        overrides = item.item.get("overrides") or {}
        context = item.item.get("context")
        source = item.item.get("source") or run_source(context)
        self._start(RunState(item.run_id, overrides, context, source=source))

    async def run_status(self, run_id: str) -> tuple[str, dict[str, Any] | None]:
        """Where a message's run stands: ("active", None) while queued or running,
        ("missing", None) if the message never reached this session, ("answered", final)
        when its run ended with a reply, ("interrupted", None) when it ended without one."""
        if self.current_run_id == run_id or any(
            q.run_id == run_id for q in await self.store.queue(self.key)
        ):
            return "active", None
        history = await self.history()
        start = next((i for i, m in enumerate(history) if m.get("runId") == run_id), None)
        if start is None:
            return "missing", None
        for message in history[start + 1 :]:
            if message.get("role") == "user":
                break
            finished = message.get("role") == "assistant" and message.get("stopReason") != "error"
            if finished and not tool_calls(message):
                return "answered", message
        return "interrupted", None

    async def resume_run(self, run_id: str, context: dict[str, Any] | None) -> str:
        """Answer a message whose run was interrupted (by a restart): a new run continues
        from the history, without storing the message again. Queued if busy."""
        new_id = f"{run_id}-resumed-{uuid.uuid4().hex[:6]}"
        async with self._lock:
            now = self.host.now_ms()
            if self._run is None:
                await self.store.start_run_without_message(self.record, new_id, now)
                self._start(RunState(new_id, {}, context, source=run_source(context)))
            else:
                item = {"resume": True, "context": context}
                self._queue_empty = False
                self.queue_size = await self.store.enqueue(self.record, new_id, item, now)
        return new_id

    async def resume(self) -> None:
        """Start the first queued message if idle (after a gateway restart)."""
        async with self._lock:
            if self._run is None:
                await self._start_next()

    async def stop(self, reason: str = "stop", *, start_next: bool = True) -> StopResult:
        """Cancel the current run at once (model stream and tools); the next queued
        message then starts, unless `start_next` is false (reset does that itself)."""
        async with self._lock:
            return await self._stop_locked(reason, start_next)

    async def _stop_locked(self, reason: str, start_next: bool) -> StopResult:
        run = self._run
        if run is None:
            return StopResult(was_running=False)
        run.cancel_reason = reason
        in_flight = run.tools_in_flight
        if run.task is not None:
            run.task.cancel()
            await asyncio.wait({run.task})
        if run.settled:  # it had already ended on its own: report that ending
            await self._finish(run, start_next=start_next)
            return StopResult(was_running=False)
        run.error = CANCELLED_BY_USER
        await self._finish(run, note=CANCELLED_BY_USER, start_next=start_next)
        return StopResult(True, run.run_id, in_flight)

    async def recover(self, run_id: str) -> None:
        """Close a run the gateway was in the middle of when it stopped (lock-free: called
        once at start-up before anything else touches this session)."""
        history = await self.history()
        now = self.host.now_ms()
        closing = self._history.dangling_results(INTERRUPTED)
        note = {
            "role": "assistant",
            "content": [],
            "provider": "gsv",
            "model": "gsv",
            "usage": empty_usage(),
            "stopReason": "error",
            "errorMessage": INTERRUPTED,
            "timestamp": now,
        }
        await self.store.finish_run(self.record, run_id, [*closing, note])
        history.extend([*closing, note])
        run = RunState(run_id, error=INTERRUPTED)
        self.emit_chat(run, "error", error=INTERRUPTED)

    # -- settings -----------------------------------------------------------------------
    async def patch(
        self,
        *,
        settings: dict[str, Any] | None = None,
        label: str | None = None,
        reset_policy: dict[str, Any] | None = None,
    ) -> None:
        """session.patch: settings merged (model field by field), label replaced
        ("" clears it), reset policy merged (mode defaults to manual). Stores the session."""
        async with self._lock:
            record = self.record
            if settings:
                merged = dict(record.settings)
                for key, value in settings.items():
                    if key == "model":
                        value = {**(merged.get("model") or {}), **value}
                    merged[key] = value
                record.settings = merged
            if label is not None:
                record.label = label.strip() or None
            if reset_policy:
                policy = {**(record.reset_policy or {}), **reset_policy}
                policy.setdefault("mode", "manual")
                record.reset_policy = policy
            record.updated_at = self.host.now_ms()
            await self.store.save(record)

    async def queued_count(self) -> int:
        self.queue_size = len(await self.store.queue(self.key))
        return self.queue_size

    async def set_pending_overrides(self, overrides: dict[str, Any]) -> None:
        """Remember a directive-only message's settings for the next message."""
        async with self._lock:
            self.record.pending_overrides = {**(self.record.pending_overrides or {}), **overrides}
            await self.store.save(self.record)

    # -- reset --------------------------------------------------------------------------
    async def reset(self) -> dict[str, Any]:
        """Stop any run, archive the history, start a new session id. Queued
        messages were acknowledged, so they survive and run in the fresh session."""
        async with self._lock:
            await self._stop_locked("reset", start_next=False)
            result = await session_reset.reset(self._history)
            await self._start_next()
        return result

    async def compact(self, keep: int) -> dict[str, Any]:
        """Keep the last `keep` messages, archiving the rest. Refused during a run."""
        async with self._lock:
            if self._run is not None:
                raise Conflict("a run is in progress: compact after it ends (or /stop it)")
            return await session_compaction.compact(self._history, keep)

    async def auto_compact(
        self, provider: Provider, model: str, window: int, source: str
    ) -> dict[str, Any] | None:
        """Summarise the older part of the history (run task only: the session's run is
        the one caller, so nothing else writes meanwhile); `source`: the run's."""
        return await session_compaction.auto_compact(self._history, provider, model, window, source)
