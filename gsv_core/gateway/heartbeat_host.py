"""The gateway as the heartbeat scheduler's host (gsv_core.heartbeat.host.HeartbeatHost):
HEARTBEAT.md from the workspace, where each agent last heard from a person, whether a
session is busy, one turn in the heartbeat session, and delivery of an alert.

Delivery follows the paths cron replies take: to a channel peer through the channels'
outbox, else to the clients of the agent's main session as a `session.notice` of kind
`heartbeat` (clients show the notices of the session they display)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.channels.base import Peer
from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.gateway.host import GatewayHost
from gsv_core.heartbeat.host import LastActive
from gsv_core.protocol import events
from gsv_core.protocol.messages import text_of
from gsv_core.routing import agent_id_of
from gsv_core.routing import heartbeat_session_key
from gsv_core.routing import main_session_key
from gsv_core.usage.ledger import HEARTBEAT as HEARTBEAT_SOURCE
from gsv_core.workspace.prompt import HEARTBEAT

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

# a heartbeat turn that takes longer is stopped (it runs in its own session)
RUN_TIMEOUT_SECONDS = 600.0
STOP_REASON = "heartbeat timeout"


class GatewayHeartbeatHost(GatewayHost):
    async def read_checklist(self, agent_id: str) -> str | None:
        try:
            found = await self._gateway.workspace.read(agent_id, HEARTBEAT)
        except NotFound:
            return None
        content = found.get("content")  # a folder named HEARTBEAT.md has none
        return content if isinstance(content, str) else None

    def last_active(self) -> dict[str, LastActive]:
        best: dict[str, LastActive] = {}
        contexts = self._gateway.channels.inbox.last_context
        for key, context in list(contexts.items()):
            agent = str(context.get("agentId") or agent_id_of(key))
            actor = self._gateway.sessions.loaded(key)
            stamp = actor.record.last_active_at if actor is not None else 0
            if agent in best and best[agent].timestamp >= stamp:
                continue
            best[agent] = LastActive(
                channel=str(context.get("channel")),
                account_id=str(context.get("accountId") or "default"),
                peer=dict(context.get("peer") or {}),
                session_key=key,
                timestamp=stamp,
            )
        return best

    def session_busy(self, agent_id: str, last: LastActive | None) -> bool:
        sessions = self._gateway.sessions
        person = last.session_key if last else main_session_key(agent_id, sessions.routing())
        for key in (person, heartbeat_session_key(agent_id)):
            actor = sessions.loaded(key)
            if actor is not None and (actor.processing or actor.queue_size > 0):
                return True
        return False

    async def over_budget(self, agent_id: str) -> bool:
        return await self._gateway.budget_hold(agent_id, HEARTBEAT_SOURCE) is not None

    async def run_turn(self, agent_id: str, session_key: str, text: str) -> str:
        actor = await self._gateway.sessions.actor(session_key)
        sent = await actor.send(text, source=HEARTBEAT_SOURCE)
        outcome = actor.run_outcome(sent.run_id)  # asked at once: the run cannot have ended
        try:
            async with asyncio.timeout(RUN_TIMEOUT_SECONDS):
                final = await asyncio.shield(outcome)
        except TimeoutError:
            await actor.stop(STOP_REASON)
            outcome.add_done_callback(_consume)
            raise TimedOut(
                f"no reply within {RUN_TIMEOUT_SECONDS:g}s; the heartbeat run was stopped"
            ) from None
        return text_of(final)

    async def deliver(self, agent_id: str, text: str, to: LastActive | None) -> str:
        return await self.notify(agent_id, text, to, "heartbeat")

    async def notify(self, agent_id: str, text: str, to: LastActive | None, kind: str) -> str:
        """`text` to the channel peer `to`, else to the clients of the agent's main
        session as a `session.notice` of `kind`; returns where it went."""
        if to is not None:
            peer = Peer.from_wire(to.peer)
            await self._gateway.channels.outbox.send_text(to.channel, to.account_id, peer, text)
            return f"{to.channel}:{to.account_id}:{peer.id}"
        key = main_session_key(agent_id, self._gateway.sessions.routing())
        details = {"agentId": agent_id, "heartbeatSessionKey": heartbeat_session_key(agent_id)}
        self._gateway.sessions.host.emit(
            events.SESSION_NOTICE,
            {"sessionKey": key, "kind": kind, "text": text, "details": details},
        )
        return key


def _consume(future: asyncio.Future[dict[str, Any]]) -> None:
    """Read a late outcome so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()


def last_channel_context(gateway: Gateway, agent_id: str) -> dict[str, Any] | None:
    """The agent's last active channel conversation as a delivery target (cron uses it)."""
    last = GatewayHeartbeatHost(gateway).last_active().get(agent_id)
    if last is None:
        return None
    return {"channel": last.channel, "accountId": last.account_id, "peer": last.peer}
