"""The gateway's state: every part it owns, as one object handlers and hosts receive.

It lives apart from the composition root (`gateway/app.py`) so handlers, native tools
and hosts can name it without importing the app that imports them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from collections.abc import Coroutine
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core import __version__
from gsv_core.agent.manager import SessionManager
from gsv_core.approval.service import ApprovalService
from gsv_core.channels.manager import ChannelManager
from gsv_core.cron.service import CronService
from gsv_core.gateway.auth import Authenticator
from gsv_core.gateway.config_service import ConfigService
from gsv_core.gateway.exec_events import ExecEventRouter
from gsv_core.gateway.listening import Listening
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.gateway.nodes import NodeService
from gsv_core.gateway.registry import ConnectionRegistry
from gsv_core.gateway.retention import RetentionService
from gsv_core.gateway.spawn_origins import SpawnOrigins
from gsv_core.gateway.transfers import TransferService
from gsv_core.gateway.web_sessions import WebSessionService
from gsv_core.heartbeat.service import HeartbeatService
from gsv_core.mcp.supervisor import McpSupervisor
from gsv_core.memory.service import MemoryService
from gsv_core.protocol.frames import FrameError
from gsv_core.providers.keys import KeyPool
from gsv_core.providers.ollama import ReportedWindows
from gsv_core.providers.pool import ProviderPool
from gsv_core.rpc.context import Peer
from gsv_core.rpc.dispatch import Router
from gsv_core.skills import SkillService
from gsv_core.storage.credentials import CredentialStore
from gsv_core.storage.db import Database
from gsv_core.storage.provider_keys import ProviderKeyStore
from gsv_core.storage.usage import UsageStore
from gsv_core.usage.budget import Budget
from gsv_core.usage.budget import Reached
from gsv_core.usage.ledger import UsageLedger
from gsv_core.usage.notices import BudgetNotices
from gsv_core.workspace import Workspace

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Gateway:
    """Everything the gateway owns; handlers reach state through this object."""

    db: Database
    config: ConfigService
    nodes: NodeService
    now_ms: Callable[[], int] = wall_clock_ms
    router: Router = field(default_factory=Router)
    registry: ConnectionRegistry = field(default_factory=ConnectionRegistry)
    exec_events: ExecEventRouter = field(init=False)
    native_tools: NativeToolRegistry = field(default_factory=NativeToolRegistry)
    approvals: ApprovalService = field(init=False)
    spawn_origins: SpawnOrigins = field(default_factory=SpawnOrigins)  # running sub-agents'
    auth: Authenticator = field(init=False)
    web_sessions: WebSessionService = field(init=False)  # closes browsers' sockets in time
    listening: Listening | None = None  # how `serve` listens (for the security audit)
    started_at: int = 0  # epoch ms, set when built (for `gsv status`)
    workspace: Workspace = field(init=False)
    skills: SkillService = field(init=False)
    sessions: SessionManager = field(init=False)
    cron: CronService = field(init=False)
    heartbeat: HeartbeatService = field(init=False)
    channels: ChannelManager = field(init=False)
    transfers: TransferService = field(init=False)
    usage: UsageLedger = field(init=False)
    budget: Budget = field(init=False)
    budget_notices: BudgetNotices = field(init=False)
    mcp: McpSupervisor = field(init=False)
    memory: MemoryService = field(init=False)
    # context windows Ollama servers report (providers/ollama.py)
    windows: ReportedWindows = field(default_factory=ReportedWindows)
    # SDK clients kept between turns (providers/pool.py)
    providers: ProviderPool = field(default_factory=ProviderPool)
    retention: RetentionService = field(init=False)  # the hourly sweep of what is kept
    version: str = __version__
    # events this gateway really emits; method families add theirs when they register
    events: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.exec_events = ExecEventRouter(self.now_ms)
        self.started_at = self.now_ms()
        self.approvals = ApprovalService(self.now_ms)
        self.auth = Authenticator(
            CredentialStore(self.db), lambda: self.config.auth_token, self.now_ms
        )
        self.web_sessions = WebSessionService(self.registry, self.now_ms)
        usage = UsageStore(self.db)
        self.keys = KeyPool(ProviderKeyStore(self.db), self.now_ms)
        self.usage = UsageLedger(usage, lambda: self.config.effective, self.now_ms)
        self.budget = Budget(usage, lambda: self.config.effective, self.now_ms)
        self._jobs: set[asyncio.Task[None]] = set()
        self.mcp = McpSupervisor(lambda: self.config.setting("mcp.servers"))

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a background job owned by the gateway (cancelled when it closes)."""
        task = asyncio.create_task(coro)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    async def budget_hold(self, agent_id: str, source: str) -> Reached | None:
        """The budget that stops work from `source` now, if one is reached; the owner is
        told (once a day per budget) in `agent_id`'s last conversation."""
        reached = await self.budget.reached(source)
        if reached is not None:
            await self.budget_notices.tell(agent_id, reached)
        return reached

    def tool_timeout(self) -> float:
        """`timeouts.toolMs` in seconds (the node tool and logs.get deadline)."""
        return max(1000, int(self.config.setting("timeouts.toolMs"))) / 1000

    async def on_disconnect(self, peer: Peer) -> None:
        """A socket closed (or re-sent `connect`): forget whatever it registered."""
        self.registry.drop(peer)
        self.transfers.peer_gone(peer)
        await self.nodes.detach(peer)

    async def on_binary(self, peer: Peer, data: bytes) -> None:
        """A binary frame: a chunk of a transfer this peer is the source of, or dropped."""
        if not peer.connected:
            log.warning("connection %s: binary frame before connect, dropped", peer.connection_id)
            return
        try:
            await self.transfers.on_binary(peer, data)
        except FrameError as exc:
            log.warning("connection %s: %s", peer.connection_id, exc)

    async def close(self) -> None:
        for task in list(self._jobs):
            task.cancel()
        await asyncio.gather(*self._jobs, return_exceptions=True)
        await self.web_sessions.stop()
        await self.retention.stop()
        await self.skills.close()
        await self.heartbeat.stop()  # before the sessions: its beats wait on them
        await self.cron.stop()  # before the sessions: its runs wait on them
        await self.channels.close()
        await self.mcp.close()  # its stdio servers are child processes
        await self.sessions.close()
        self.workspace.close()  # after the runs: none reads its prompt files now
        await self.providers.close()  # after the runs: none is streaming now
        await self.memory.close()
        await self.db.close()
