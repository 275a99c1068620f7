"""Composition root of the gateway: `build_gateway()` opens storage and wires the parts.

Handler modules each expose `register(router, gateway)`; adding a method family means
adding a module to `HANDLER_MODULES`, not new plumbing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from gsv_core.agent.manager import SessionManager
from gsv_core.channels.base import Channel
from gsv_core.channels.manager import ChannelManager
from gsv_core.channels.test_channel import TestChannel
from gsv_core.config import setting
from gsv_core.cron.jobs import CronJob
from gsv_core.cron.service import CronService
from gsv_core.errors import InvalidParams
from gsv_core.fsmodes import tighten_gsv_modes
from gsv_core.gateway.agent_host import GatewayAgentHost
from gsv_core.gateway.agent_host import ProviderFactory
from gsv_core.gateway.channel_host import GatewayChannelHost
from gsv_core.gateway.config_service import ConfigService
from gsv_core.gateway.handlers import approvals as approval_handlers
from gsv_core.gateway.handlers import auth as auth_handlers
from gsv_core.gateway.handlers import channels as channel_handlers
from gsv_core.gateway.handlers import chat as chat_handlers
from gsv_core.gateway.handlers import config as config_handlers
from gsv_core.gateway.handlers import connect as connect_handlers
from gsv_core.gateway.handlers import cron as cron_handlers
from gsv_core.gateway.handlers import heartbeat as heartbeat_handlers
from gsv_core.gateway.handlers import mcp as mcp_handlers
from gsv_core.gateway.handlers import memory as memory_handlers
from gsv_core.gateway.handlers import models as model_handlers
from gsv_core.gateway.handlers import nodes as node_handlers
from gsv_core.gateway.handlers import pairing as pairing_handlers
from gsv_core.gateway.handlers import security as security_handlers
from gsv_core.gateway.handlers import sessions as session_handlers
from gsv_core.gateway.handlers import skills as skill_handlers
from gsv_core.gateway.handlers import status as status_handlers
from gsv_core.gateway.handlers import tools as tools_handlers
from gsv_core.gateway.handlers import transfers as transfer_handlers
from gsv_core.gateway.handlers import usage as usage_handlers
from gsv_core.gateway.handlers import web as web_handlers
from gsv_core.gateway.handlers import workspace as workspace_handlers
from gsv_core.gateway.heartbeat_host import GatewayHeartbeatHost
from gsv_core.gateway.heartbeat_host import last_channel_context
from gsv_core.gateway.native import cron_tools
from gsv_core.gateway.native import gateway_tools
from gsv_core.gateway.native import memory_tools
from gsv_core.gateway.native import message_tools
from gsv_core.gateway.native import session_tools
from gsv_core.gateway.native import spawn_tools
from gsv_core.gateway.native import transfer_tools
from gsv_core.gateway.native import web_tools
from gsv_core.gateway.native import workspace_tools
from gsv_core.gateway.nodes import NodeService
from gsv_core.gateway.probes import GatewayNodeAccess
from gsv_core.gateway.retention import RetentionService
from gsv_core.gateway.retention import Step
from gsv_core.gateway.state import Gateway
from gsv_core.gateway.state import wall_clock_ms
from gsv_core.gateway.tool_router import GatewayToolRouter
from gsv_core.gateway.transfers import TransferService
from gsv_core.gateway.transfers import WorkspacePath
from gsv_core.heartbeat.service import HeartbeatService
from gsv_core.memory.embeddings import EmbeddingsEndpoint
from gsv_core.memory.embeddings import Spending
from gsv_core.memory.service import MemoryService
from gsv_core.pairing import PairingService
from gsv_core.providers.retry import RetryPolicy
from gsv_core.routing import RoutingSettings
from gsv_core.skills import SkillService
from gsv_core.storage.channels import ChannelStore
from gsv_core.storage.config_store import ConfigStore
from gsv_core.storage.cron import CronStore
from gsv_core.storage.db import Database
from gsv_core.storage.media import MediaStore
from gsv_core.storage.nodes import NodeStore
from gsv_core.storage.outbox import OutboxStore
from gsv_core.storage.pairing import PairingStore
from gsv_core.storage.sessions import SessionStore
from gsv_core.storage.usage import DAY_MS
from gsv_core.transfer import PartJournal
from gsv_core.usage.ledger import MEMORY
from gsv_core.usage.ledger import cron_source
from gsv_core.usage.ledger import embeddings_call
from gsv_core.usage.notices import BudgetNotices
from gsv_core.workspace import FilesystemBackend
from gsv_core.workspace import Workspace
from gsv_core.workspace.paths import normalise_path
from gsv_core.workspace.paths import validate_agent_id
from gsv_core.workspace.paths import write_location

log = logging.getLogger(__name__)

HANDLER_MODULES = (
    connect_handlers,
    auth_handlers,
    security_handlers,
    model_handlers,
    status_handlers,
    config_handlers,
    tools_handlers,
    node_handlers,
    chat_handlers,
    session_handlers,
    workspace_handlers,
    skill_handlers,
    cron_handlers,
    heartbeat_handlers,
    channel_handlers,
    pairing_handlers,
    approval_handlers,
    transfer_handlers,
    usage_handlers,
    mcp_handlers,
    web_handlers,
    memory_handlers,
)
# native tools are listed in this order (as in docs/tools.md): workspace, gateway, cron, sessions
NATIVE_TOOL_MODULES = (
    workspace_tools, gateway_tools, cron_tools, message_tools, session_tools, transfer_tools,
    web_tools, spawn_tools, memory_tools,
)  # fmt: skip


PROVIDER_SETTINGS = ("providers", "apiKeys")


def providers_changed(gateway: Gateway, path: str) -> None:
    """The providers' settings changed: the kept SDK clients are let go of (the next call
    would build new ones anyway; this frees the old connections at once)."""
    if not path or path.split(".", 1)[0] in PROVIDER_SETTINGS:
        gateway.providers.clear()


def keys_changed(gateway: Gateway, path: str) -> None:
    """The owner set a provider's keys: the ones set aside may be tried again."""
    clearing = gateway.keys.config_changed(path)
    if clearing is not None:
        gateway.spawn(clearing)


async def build_gateway(
    database: Path,
    provider_factory: ProviderFactory | None = None,
    now_ms: Callable[[], int] | None = None,
    retry: RetryPolicy | None = None,
) -> Gateway:
    """Open the database at `database` and assemble a gateway around it. The workspace and
    the media store live next to the database (the data directory)."""
    await asyncio.to_thread(tighten_gsv_modes, database)  # before anything is read
    db = await Database.open(database)
    try:
        config = await ConfigService.load(ConfigStore(db))
        nodes = NodeService(NodeStore(db), wall_clock_ms)
        await nodes.load()
    except BaseException:
        await db.close()
        raise
    gateway = Gateway(db=db, config=config, nodes=nodes, now_ms=now_ms or wall_clock_ms)
    data_dir = database.parent
    tools = GatewayToolRouter(gateway, gateway.native_tools, gateway.approvals)
    gateway.workspace = Workspace(FilesystemBackend(data_dir / "workspace"))
    gateway.skills = SkillService(
        gateway.workspace, GatewayNodeAccess(nodes), lambda: gateway.config.effective,
        gateway.now_ms, bundled_state=data_dir / "bundled-skills.json",
    )  # fmt: skip
    await gateway.skills.seed_bundled()
    parts = PartJournal(data_dir / "transfer-parts.json")
    if left := await asyncio.to_thread(parts.sweep):
        log.info("removed %d partial file(s) of transfers cut off by an earlier stop", left)
    gateway.transfers = TransferService(
        lambda node_id: node.peer if (node := gateway.nodes.online(node_id)) else None,
        workspace_file(gateway.workspace),
        parts,
        # what a node's guard checks a transfer's binding with
        lambda node_id: node.approval_key if (node := gateway.nodes.online(node_id)) else None,
    )
    host = GatewayAgentHost(
        gateway, tools, MediaStore(data_dir / "media"), gateway.workspace, provider_factory,
        retry,
    )  # fmt: skip
    await gateway.keys.load()
    gateway.memory = MemoryService(
        db,
        gateway.workspace.backend,
        lambda: gateway.config.setting("memory.notes"),
        lambda: EmbeddingsEndpoint.from_config(
            (gateway.config.effective.get("memory") or {}).get("embeddings")
        ),
        memory_spending(gateway),
    )
    gateway.workspace.listeners.append(gateway.memory.file_changed)
    gateway.sessions = SessionManager(SessionStore(db, gateway.memory.index), host)
    gateway.cron = CronService(
        CronStore(db), gateway.sessions, lambda: gateway.config.effective, gateway.now_ms,
        lambda agent_id: last_channel_context(gateway, agent_id),
        lambda job: cron_budget_hold(gateway, job),
    )  # fmt: skip
    await gateway.cron.load()
    await gateway.usage.prune()
    await gateway.memory.start()  # builds in the background when never built
    beats = GatewayHeartbeatHost(gateway)
    gateway.heartbeat = HeartbeatService(beats)
    gateway.budget_notices = BudgetNotices(
        gateway.now_ms,
        lambda agent, text: beats.notify(agent, text, beats.last_active().get(agent), "budget"),
        lambda: gateway.config.effective,
    )
    gateway.config.listeners.append(lambda _path: gateway.heartbeat.wake())
    gateway.config.listeners.append(gateway.mcp.config_changed)
    gateway.config.listeners.append(lambda path: keys_changed(gateway, path))
    gateway.config.listeners.append(lambda path: providers_changed(gateway, path))
    gateway.channels = ChannelManager(
        ChannelStore(db), PairingService(PairingStore(db)), GatewayChannelHost(gateway),
        channel_adapters(), OutboxStore(db),
    )  # fmt: skip
    gateway.retention = RetentionService(gateway.now_ms, retention_steps(gateway))
    for module in NATIVE_TOOL_MODULES:
        module.register(gateway.native_tools, gateway)
    for module in HANDLER_MODULES:
        module.register(gateway.router, gateway)
    return gateway


def memory_spending(gateway: Gateway) -> Spending:
    """Embeddings are background work of the default agent: recorded in the ledger as
    `memory`, and stopped while a budget for background work is reached."""

    def agent() -> str:
        return RoutingSettings.from_config(gateway.config.effective).default_agent

    async def record(model: str, tokens: int) -> None:
        await gateway.usage.record(embeddings_call(agent(), model, tokens))

    async def held() -> str | None:
        reached = await gateway.budget_hold(agent(), MEMORY)
        return reached.message() if reached is not None else None

    return Spending(record, held)


def retention_steps(gateway: Gateway) -> dict[str, Step]:
    """What the hourly retention sweep forgets (gateway/retention.py lists each rule)."""
    channels = gateway.channels

    async def pairing_requests() -> int:
        return await channels.pairing.store.expire(gateway.now_ms() - channels.pairing_ttl_ms() + 1)

    async def one_off_actors() -> int:
        return gateway.sessions.drop_idle()  # memory only: the sessions stay stored

    async def one_off_sessions() -> int:
        days = int(setting(gateway.config.effective, "session.oneOffRetentionDays"))
        return await gateway.sessions.delete_stale(gateway.now_ms() - days * DAY_MS)

    return {
        "usageRows": gateway.usage.prune,
        "inboundMessages": channels.inbox.forget_old,
        "pairingRequests": pairing_requests,
        "joinCodes": lambda: gateway.auth.store.forget_expired_codes(gateway.now_ms()),
        # actors first: a stale session whose actor is still loaded is not deleted
        "sessionActors": one_off_actors,
        "oneOffSessions": one_off_sessions,
    }


async def cron_budget_hold(gateway: Gateway, job: CronJob) -> str | None:
    """Why a cron job may not spend now (a reached budget; the owner is told), or None."""
    reached = await gateway.budget_hold(job.agent_id, cron_source(job.name))
    return reached.message() if reached is not None else None


def channel_adapters() -> dict[str, Channel]:
    """The in-process messenger adapters this gateway offers (each imports its platform
    library only when an account starts)."""
    from gsv_core.channels.discord import DiscordChannel  # discord.py loads at start
    from gsv_core.channels.slack import SlackChannel  # slack_sdk loads at start
    from gsv_core.channels.telegram import TelegramChannel  # python-telegram-bot at start
    from gsv_core.channels.whatsapp import WhatsAppChannel  # httpx loads at start

    return {
        "test": TestChannel(),
        "discord": DiscordChannel(),
        "slack": SlackChannel(),
        "telegram": TelegramChannel(),
        "whatsapp": WhatsAppChannel(),
    }


def workspace_file(workspace: Workspace) -> WorkspacePath:
    """`gsv:workspace/<path>` endpoints: the agent's own file under the workspace path
    rules (never a raw storage key), as a real path transfers stream to."""

    async def resolve(agent_id: str, path: str) -> Path:
        relative = normalise_path(path)
        if not relative:
            raise InvalidParams("a transfer needs a file in the workspace, not its root")
        key = write_location(validate_agent_id(agent_id), relative).key
        backend = workspace.backend
        if not isinstance(backend, FilesystemBackend):
            raise InvalidParams("file transfers need the filesystem workspace backend")
        return Path(backend.real_path(key))

    return resolve
