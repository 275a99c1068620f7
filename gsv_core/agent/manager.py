"""The session actors of a gateway: one per canonical session key, created on first use,
reads that describe a session without loading it, and the recovery of runs and queues
after a restart.

Invariant: there is at most one actor per key, so two runs of one session can never exist
at once. Callers hold an actor across awaits (a chat message between its approval check and
`send()`, a cron job, sub-agent or gsv__SessionSend waiting for a run's outcome, then
reading its failed tools or stopping it), and a new actor made meanwhile for the same key
would run beside the old one and lose its updates. So a conversation's actor stays for the
life of the gateway, and what it holds that grows, its cached history, is bounded instead
(`HistoryCache`): only the most recently used sessions, and any busy one, keep it. An
actor without its history costs about 2 kB; it is made by a use (a message, a patch, reset
or compact, a channel replaying its journal), never by the session read methods
(`record_for_reading` and the reads below).

One-off sessions are the exception (`drop_idle`, run by the hourly retention sweep): every
cron task run, sub-agent and gsv__SessionSend gets a session of its own, so a job every
minute would otherwise add 1,440 actors a day for ever. Their actor is forgotten once it is
idle (no run, queue or waiter) and unused for `DROP_AFTER_MS`: each holder above fetches
its actor right before using it and holds it for the length of one run (reading its failed
tools right after), so an actor nobody asked for in that long is held by nobody. A later
use loads the session again from the store, with the same id and history.

The sessions themselves of cron task runs and sub-agents are deleted once nobody touched
them for `session.oneOffRetentionDays` (`delete_stale`, also by the sweep): the gateway made
them for one piece of work and no person names them. A gsv__SessionSend target stays: its
key is whatever name the agent gave, maybe a conversation someone comes back to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from gsv_core.agent.ack_first import AckFirst
from gsv_core.agent.history_cache import DEFAULT_LIMIT
from gsv_core.agent.history_cache import HistoryCache
from gsv_core.agent.host import AgentHost
from gsv_core.agent.session import SessionActor
from gsv_core.routing import RoutingSettings
from gsv_core.routing import agent_id_of
from gsv_core.routing import canonicalize_session_key
from gsv_core.routing import is_main_session_key
from gsv_core.routing import normalise_agent_id
from gsv_core.routing import validate_session_key
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.sessions import SessionStore
from gsv_core.workspace.locks import KeyLocks

log = logging.getLogger(__name__)


# a session another session started with gsv__SessionSend (its key says nothing of that)
SESSION_SEND_KIND = "sessionSend"
SPAWN_KIND = "spawn"  # a sub-agent's session (gsv__Spawn)
# sessions made for one piece of work, whose idle actors are dropped (`drop_idle`)
ONE_OFF_KINDS = frozenset({"cron", SPAWN_KIND, SESSION_SEND_KIND})
DROP_AFTER_MS = 10 * 60_000  # unused this long, an idle one-off actor is forgotten
# one-off sessions deleted whole once stale (`delete_stale`)
RETIRED_KINDS = frozenset({"cron", SPAWN_KIND})
DELETE_BATCH = 200  # sessions deleted in one write: the writer is not held long
DELETE_BATCHES = 50  # at most this many a sweep: a backlog goes over several sweeps


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
    def __init__(
        self, store: SessionStore, host: AgentHost, history_limit: int = DEFAULT_LIMIT
    ) -> None:
        self.store = store
        self.host = host
        self._actors: dict[str, SessionActor] = {}
        self._used_at: dict[str, int] = {}  # key -> when `actor()` last gave it (ms)
        # per key, not one for all: a crowd of new sessions is made side by side
        self._creating = KeyLocks()
        self.histories = HistoryCache(history_limit)
        # messages being acknowledged go before the runs' work (ack_first.py)
        self.acks = AckFirst()
        self._routing: tuple[Mapping[str, Any], RoutingSettings] | None = None

    def routing(self) -> RoutingSettings:
        """The routing settings of the config now. Worked out once per config: a change
        replaces the effective config object (never edits it), and every message asks."""
        config = self.host.config()
        if self._routing is None or self._routing[0] is not config:
            self._routing = (config, RoutingSettings.from_config(config))
        return self._routing[1]

    def canonical(self, raw: str) -> str:
        """A caller's session key, validated (400 for garbage) and canonicalised."""
        return canonicalize_session_key(validate_session_key(raw), self.routing())

    def loaded(self, key: str) -> SessionActor | None:
        return self._actors.get(key)

    def loaded_count(self) -> int:
        return len(self._actors)

    async def actor(self, key: str, kind: str | None = None) -> SessionActor:
        """The actor for a canonical key, loading or creating its session (`kind`: what a
        session created now is for, when its key cannot say; default from the key)."""
        actor = self._actors.get(key)
        if actor is None:
            async with self._creating.hold(key):
                actor = self._actors.get(key)
                if actor is None:
                    stored = await self.store.get(key)
                    record = stored or self._new_record(key, kind)
                    main = is_main_session_key(key, self.routing())
                    actor = SessionActor(
                        record, self.store, self.host, is_main=main,
                        on_history_load=self.histories.used, acks=self.acks,
                        fresh=stored is None,
                    )  # fmt: skip
                    self._actors[key] = actor
        self._used_at[key] = self.host.now_ms()
        self.histories.used(actor)
        return actor

    def drop_idle(self) -> int:
        """Forget the actors of one-off sessions idle and unused for `DROP_AFTER_MS` (see
        the module); returns how many. Their sessions stay in the store."""
        cutoff = self.host.now_ms() - DROP_AFTER_MS
        gone = [
            key
            for key, actor in self._actors.items()
            if actor.record.kind in ONE_OFF_KINDS
            and self._used_at.get(key, 0) <= cutoff
            and actor.idle
        ]
        for key in gone:
            del self._actors[key]
            self._used_at.pop(key, None)
            self.histories.forget(key)
        return len(gone)

    async def delete_stale(self, before: int) -> int:
        """Delete the cron-run and sub-agent sessions untouched since before `before`
        (epoch ms) with nothing running or waiting in them: rows, messages, index rows
        and media (see the module). One whose actor is loaded waits for `drop_idle`.
        Returns how many went."""
        deleted = 0
        for _ in range(DELETE_BATCHES):
            found = await self.store.stale(RETIRED_KINDS, before, DELETE_BATCH)
            gone = await self._delete(found, before)
            deleted += gone
            if len(found) < DELETE_BATCH or not gone:  # none left, or only loaded ones
                break
        return deleted

    async def _delete(self, keys: list[str], before: int) -> int:
        async with contextlib.AsyncExitStack() as held:
            for key in keys:  # no actor is made for them meanwhile (`actor`)
                await held.enter_async_context(self._creating.hold(key))
            gone = await self.store.delete_stale(
                [key for key in keys if key not in self._actors], before
            )
        for key in gone:
            try:
                await self.host.media.delete_session(key)
            except OSError as exc:  # the session is gone; its files must not stop the rest
                log.warning("could not delete the media of session %s: %s", key, exc)
        return len(gone)

    # -- reads: they describe a session without making (or keeping) anything ------------
    async def record_for_reading(self, key: str) -> SessionRecord:
        """The session as the reads describe it: the loaded actor's record, else the
        stored one, else a fresh one, stored at once (a row, no actor): the id a client
        reads for a key never used is the id its session will have, so a later reset
        lists it in `previousSessionIds`."""
        actor = self._actors.get(key)
        if actor is not None:
            return actor.record
        stored = await self.store.get(key)
        if stored is not None:
            return stored
        async with self._creating.hold(key):  # two first reads at once agree on one id
            actor = self._actors.get(key)
            if actor is not None:
                return actor.record
            record = await self.store.get(key)
            if record is None:
                record = self._new_record(key)
                await self.store.save(record)
            return record

    async def messages(self, key: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The history (its last `limit` messages): the cached one if in memory, else
        read from the store without caching it."""
        actor = self._actors.get(key)
        cached = actor.history_cached if actor is not None else None
        if cached is None:
            return await self.store.messages(key, limit or None)
        return list(cached[-limit:] if limit else cached)

    async def message_count(self, key: str) -> int:
        actor = self._actors.get(key)
        cached = actor.history_cached if actor is not None else None
        return len(cached) if cached is not None else await self.store.message_count(key)

    async def queue_size(self, key: str) -> int:
        actor = self._actors.get(key)
        if actor is not None:
            return await actor.queued_count()
        return len(await self.store.queue(key))

    def processing(self, key: str) -> bool:
        actor = self._actors.get(key)
        return actor is not None and actor.processing

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
