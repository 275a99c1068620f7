"""The session actors of a gateway: one per canonical session key, created on first use,
and the recovery of runs and queues after a restart."""

from __future__ import annotations

import asyncio
import logging
import uuid

from gsv_core.agent.host import AgentHost
from gsv_core.agent.session import SessionActor
from gsv_core.routing import (
    RoutingSettings,
    agent_id_of,
    canonicalize_session_key,
    is_main_session_key,
    normalise_agent_id,
    validate_session_key,
)
from gsv_core.storage.sessions import SessionRecord, SessionStore

log = logging.getLogger(__name__)


# a session another session started with gsv__SessionSend (its key says nothing of that)
SESSION_SEND_KIND = "sessionSend"
SPAWN_KIND = "spawn"  # a sub-agent's session (gsv__Spawn)


def session_kind(key: str) -> str:
    """What a session is for, from its key: cron, heartbeat or chat."""
    parts = key.split(":")
    if len(parts) >= 4 and parts[0] == "agent":
        if parts[2] == "cron":
            return "cron"
        if parts[2] == "heartbeat":
            return "heartbeat"
    return "chat"


class SessionManager:
    def __init__(self, store: SessionStore, host: AgentHost) -> None:
        self.store = store
        self.host = host
        self._actors: dict[str, SessionActor] = {}
        self._creating = asyncio.Lock()

    def routing(self) -> RoutingSettings:
        return RoutingSettings.from_config(self.host.config())

    def canonical(self, raw: str) -> str:
        """A caller's session key, validated (400 for garbage) and canonicalised."""
        return canonicalize_session_key(validate_session_key(raw), self.routing())

    def loaded(self, key: str) -> SessionActor | None:
        return self._actors.get(key)

    async def actor(self, key: str, kind: str | None = None) -> SessionActor:
        """The actor for a canonical key, loading or creating its session (`kind`: what a
        session created now is for, when its key cannot say; default from the key)."""
        actor = self._actors.get(key)
        if actor is not None:
            return actor
        async with self._creating:
            actor = self._actors.get(key)
            if actor is None:
                record = await self.store.get(key) or self._new_record(key, kind)
                main = is_main_session_key(key, self.routing())
                actor = SessionActor(record, self.store, self.host, is_main=main)
                self._actors[key] = actor
        return actor

    def _new_record(self, key: str, kind: str | None = None) -> SessionRecord:
        now = self.host.now_ms()
        policy = self.host.config().get("session", {}).get("defaultResetPolicy")
        return SessionRecord(
            session_key=key,
            session_id=str(uuid.uuid4()),
            agent_id=normalise_agent_id(agent_id_of(key)),
            kind=kind or session_kind(key),
            created_at=now,
            updated_at=now,
            last_active_at=now,
            reset_policy=dict(policy) if isinstance(policy, dict) else None,
        )

    async def recover(self) -> None:
        """Close runs interrupted by a restart and continue every queue."""
        open_runs, queued = await self.store.recovery_state()
        for run_id, key in open_runs:
            actor = await self.actor(key)
            log.warning("run %s of %s was interrupted by a restart", run_id, key)
            await actor.recover(run_id)
        for key in dict.fromkeys([*(k for _, k in open_runs), *queued]):
            await (await self.actor(key)).resume()

    async def close(self) -> None:
        """Gateway shutdown: cancel runs in flight (their rows stay for recovery)."""
        tasks = [a.running_task() for a in self._actors.values()]
        live = [t for t in tasks if t is not None]
        for task in live:
            task.cancel()
        await asyncio.gather(*live, return_exceptions=True)
