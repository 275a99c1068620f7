"""HeartbeatService: the timer that runs each agent's heartbeat when it is due, and the
operations behind `heartbeat.status/start/trigger`.

The timer is one asyncio task. Every tick reads the config again, so a
new interval, prompt, target or waking window applies at once: an agent's next beat is
one interval after its anchor (the scheduler's start, or its last beat), and an agent
switched back on starts counting from that moment. The task sleeps until the earliest
next beat, at most a minute (so a config change or a clock jump is noticed), or until
`wake()`.

A due beat first checks, in this order, the waking window, HEARTBEAT.md and whether the
person's session is busy; any of them skips the beat with its reason and no model call.
Otherwise the heartbeat prompt runs as a turn in `agent:{id}:heartbeat:system:internal`
and the reply goes through `response.held_back` before it is delivered. A manual trigger
skips the checks. Either way the next beat is one interval after a scheduled one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from typing import Final

from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.heartbeat import response
from gsv_core.heartbeat.checks import BUDGET
from gsv_core.heartbeat.checks import OUTSIDE_ACTIVE_HOURS
from gsv_core.heartbeat.checks import SESSION_BUSY
from gsv_core.heartbeat.checks import checklist_skip
from gsv_core.heartbeat.host import HeartbeatHost
from gsv_core.heartbeat.host import LastActive
from gsv_core.heartbeat.settings import HeartbeatSettings
from gsv_core.heartbeat.settings import agent_ids
from gsv_core.heartbeat.settings import settings_for
from gsv_core.heartbeat.state import BeatResult
from gsv_core.heartbeat.state import HeartbeatState
from gsv_core.routing import heartbeat_session_key
from gsv_core.timer import Timer
from gsv_core.timer import seconds_until

log = logging.getLogger(__name__)

INTERVAL: Final = "interval"
MANUAL: Final = "manual"


class HeartbeatService:
    def __init__(self, host: HeartbeatHost) -> None:
        self.host = host
        self._states: dict[str, HeartbeatState] = {}
        self._running: dict[str, asyncio.Task[BeatResult]] = {}  # scheduled beats
        self._manual: set[asyncio.Task[BeatResult]] = set()
        self._timer = Timer("heartbeat", self._tick)

    # -- life cycle -----------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._timer.running

    def start(self, agent_id: str | None = None) -> None:
        """(Re)schedule: forget agents no longer configured; every agent's (or only
        `agent_id`'s) next beat is one interval from now; start the timer."""
        now = self.host.now_ms()
        configured = agent_ids(self.host.config())
        for agent in configured if agent_id is None else [self._configured(agent_id)]:
            self._state(agent, now).anchor_ms = now
        self._refresh(now)  # also forgets agents no longer configured
        self._timer.start()
        self.wake()

    async def stop(self) -> None:
        """Stop the timer and cancel the beats in flight."""
        await self._timer.stop([*self._running.values(), *self._manual])

    def wake(self) -> None:
        """Look at the agents again now (the config or the clock moved)."""
        self._timer.wake()

    def _tick(self) -> float:
        """Start the due beats; return the seconds until the next one is due."""
        now = self.host.now_ms()
        self._refresh(now)
        for state in list(self._states.values()):
            due = state.next_at is not None and state.next_at <= now
            if due and state.agent_id not in self._running:
                state.anchor_ms = now  # the next beat is one interval after this one
                self._launch(state.agent_id)
        self._refresh(now)
        waiting = [s.next_at for s in self._states.values() if s.next_at is not None]
        return seconds_until(waiting, now)

    def _refresh(self, now: int) -> None:
        """Re-read the config: one state per configured agent, with its next beat."""
        config = self.host.config()
        configured = agent_ids(config)
        for gone in set(self._states) - set(configured):
            del self._states[gone]
        for agent in configured:
            state = self._state(agent, now)
            try:
                settings = settings_for(config, agent)
            except InvalidParams as exc:
                state.problem, state.next_at = exc.message, None
                continue
            if settings.enabled and state.every_ms == 0:
                state.anchor_ms = now  # switched (back) on: count from now
            state.problem, state.every, state.every_ms = None, settings.every, settings.every_ms
            state.next_at = state.anchor_ms + settings.every_ms if settings.enabled else None

    def _state(self, agent_id: str, now: int) -> HeartbeatState:
        state = self._states.get(agent_id)
        if state is None:
            state = self._states[agent_id] = HeartbeatState(agent_id, anchor_ms=now)
        return state

    def _configured(self, agent_id: str) -> str:
        configured = agent_ids(self.host.config())
        if agent_id not in configured:
            raise NotFound(
                f"no heartbeat for agent {agent_id!r}: heartbeats run for "
                f"{', '.join(configured)} (the ids in agents.list)"
            )
        return agent_id

    # -- reading --------------------------------------------------------------------------
    def status(self, agent_id: str | None = None) -> dict[str, dict[str, Any]]:
        """agent id -> state, for configured agents and agents heard from on a channel."""
        self._refresh(self.host.now_ms())
        last = self.host.last_active()
        agents = sorted(set(self._states) | set(last))
        if agent_id is not None:
            if agent_id not in agents:
                self._configured(agent_id)  # raises NotFound naming the agents
            agents = [agent_id]
        result: dict[str, dict[str, Any]] = {}
        for agent in agents:
            state = self._states.get(agent)
            wire = state.to_wire() if state else HeartbeatState(agent, 0).to_wire()
            if agent in last:
                wire["lastActive"] = last[agent].to_wire()
            result[agent] = wire
        return result

    # -- running --------------------------------------------------------------------------
    async def trigger(self, agent_id: str) -> BeatResult:
        """Run a beat now without the checks, and wait for its end (not cancelled when the
        caller goes away)."""
        self._state(self._configured(agent_id), self.host.now_ms())
        task = asyncio.create_task(self._beat(agent_id, MANUAL))
        self._manual.add(task)
        task.add_done_callback(self._manual.discard)
        await asyncio.wait([task])
        return task.result()

    def _launch(self, agent_id: str) -> None:
        task = asyncio.create_task(self._beat(agent_id, INTERVAL))
        self._running[agent_id] = task
        task.add_done_callback(lambda _: self._ended(agent_id, task))

    def _ended(self, agent_id: str, task: asyncio.Task[BeatResult]) -> None:
        if self._running.get(agent_id) is task:
            del self._running[agent_id]
        self.wake()  # a beat that outlasted its interval is due again

    async def _beat(self, agent_id: str, trigger: str) -> BeatResult:
        now = self.host.now_ms()
        state = self._state(agent_id, now)
        state.running = True
        try:
            result = await self._attempt(state, trigger, now)
        except GsvError as exc:
            result = BeatResult(now, trigger, "error", error=exc.message)
        except Exception:
            log.exception("heartbeat of agent %s failed", agent_id)
            result = BeatResult(now, trigger, "error", error="internal error (see the gateway log)")
        finally:
            state.running = False
        state.last_result = result
        if result.status == "error":
            log.warning("heartbeat of agent %s failed: %s", agent_id, result.error)
        return result

    async def _attempt(self, state: HeartbeatState, trigger: str, now: int) -> BeatResult:
        settings = settings_for(self.host.config(), state.agent_id)
        last = self.host.last_active().get(state.agent_id)
        if trigger != MANUAL:
            reason = await self._skip_reason(settings, last, now)
            if reason is not None:
                return BeatResult(now, trigger, "skipped", skip_reason=reason)
        state.last_at = now
        key = heartbeat_session_key(state.agent_id)
        reply = await self.host.run_turn(state.agent_id, key, settings.prompt)
        return await self._deliver(
            state, settings, last, reply.strip(), BeatResult(now, trigger, "ok")
        )

    async def _skip_reason(
        self, settings: HeartbeatSettings, last: LastActive | None, now: int
    ) -> str | None:
        if not settings.active_hours.contains(now):
            return OUTSIDE_ACTIVE_HOURS
        reason = checklist_skip(await self.host.read_checklist(settings.agent_id))
        if reason is not None:
            return reason
        if self.host.session_busy(settings.agent_id, last):
            return SESSION_BUSY
        if await self.host.over_budget(settings.agent_id):
            return BUDGET
        return None

    async def _deliver(
        self,
        state: HeartbeatState,
        settings: HeartbeatSettings,
        last: LastActive | None,
        reply: str,
        result: BeatResult,
    ) -> BeatResult:
        sent_at = self.host.now_ms()
        result.reply = reply
        result.held_back = response.held_back(reply, state.last_text, state.last_sent_at, sent_at)
        if result.held_back is None:
            result.held_back = _target_problem(settings.target, last)
        if result.held_back is not None:
            return result
        result.delivered_to = await self.host.deliver(state.agent_id, reply, last)
        result.delivered = True
        state.last_text, state.last_sent_at = reply, sent_at
        return result


def _target_problem(target: str, last: LastActive | None) -> str | None:
    """`none` delivers nothing; a channel name only when the agent last heard from a
    person there; `last` goes to the last channel peer, else the main session's clients."""
    if target == "none":
        return response.TARGET_NONE
    if target != "last" and (last is None or last.channel != target):
        return response.NO_TARGET
    return None
