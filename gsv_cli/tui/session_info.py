"""What the TUI knows about its session and gateway, fetched over the client: the
canonical key, label, effective model and thinking level, tokens, whether a run is in
progress, the stored conversation, and how many nodes are online."""

from __future__ import annotations

import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.protocol import methods as m

HISTORY_LIMIT = 200
RPC_TIMEOUT = 30.0


@dataclass
class SessionInfo:
    key: str
    label: str | None = None
    model: str = "?"  # provider/id of the model the next message will use
    thinking: str = "off"
    tokens_in: int = 0
    tokens_out: int = 0
    processing: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)
    message_count: int = 0  # stored messages in all (more than `messages` when limited)
    config: dict[str, Any] = field(default_factory=dict)
    approvals: list[dict[str, Any]] = field(default_factory=list)  # pending, this session's
    spent_today: float | None = None  # USD since local midnight, all sessions (None: unknown)

    @property
    def provider(self) -> str:
        return self.model.partition("/")[0]

    def add_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.tokens_in += int(usage.get("input") or 0)
            self.tokens_out += int(usage.get("output") or 0)


def next_model(got: dict[str, Any]) -> tuple[str, str]:
    """(provider, id) of the model the session's next message will use, as the gateway
    resolved it (`session.get`'s `effectiveModel`: session, agent and config settings)."""
    model = got.get("effectiveModel")
    chosen = model if isinstance(model, dict) else {}
    return str(chosen.get("provider") or "?"), str(chosen.get("id") or "?")


def thinking_label(settings: dict[str, Any]) -> str:
    level = settings.get("thinkingLevel")
    return "off" if level in (None, "", "none") else str(level)


async def fetch_session(
    client: GatewayClient, key: str, limit: int = HISTORY_LIMIT, timeout: float | None = RPC_TIMEOUT
) -> SessionInfo:
    """Everything the chat shows about session `key` (canonicalised by the gateway)."""
    info = await fetch_status(client, key, timeout)
    preview = await client.call(
        m.SESSION_PREVIEW, {"sessionKey": info.key, "limit": limit}, timeout=timeout
    )
    stats = await client.call(m.SESSION_STATS, {"sessionKey": info.key}, timeout=timeout)
    info.messages = list(preview.get("messages") or [])
    info.message_count = int(preview.get("messageCount") or len(info.messages))
    info.processing = bool(stats.get("isProcessing"))
    pending = await client.call(m.TOOL_APPROVALS, timeout=timeout)
    info.approvals = [a for a in pending.get("approvals") or [] if a.get("sessionKey") == info.key]
    return info


async def fetch_status(
    client: GatewayClient, key: str, timeout: float | None = RPC_TIMEOUT
) -> SessionInfo:
    """The session's key, label, model, thinking level and tokens (no messages)."""
    got = await client.call(m.SESSION_GET, {"sessionKey": key}, timeout=timeout)
    config = (await client.call(m.CONFIG_GET, {}, timeout=timeout)).get("config") or {}
    settings = got.get("settings") or {}
    tokens = got.get("tokens") or {}
    info = SessionInfo(
        key=str(got.get("sessionKey") or key),
        label=got.get("label"),
        model="/".join(next_model(got)),
        thinking=thinking_label(settings),
        tokens_in=int(tokens.get("input") or 0),
        tokens_out=int(tokens.get("output") or 0),
        config=config,
    )
    info.spent_today = await spend_today(client, config, timeout)
    return info


async def spend_today(
    client: GatewayClient, config: dict[str, Any], timeout: float | None = RPC_TIMEOUT
) -> float | None:
    """USD spent today by every session, from the usage ledger; the day starts at midnight
    in `userTimezone`, as the budgets' does (None: a gateway without a ledger, or no call
    with a known price)."""
    from gsv_core.timezones import user_zone
    from gsv_core.usage.budget import period_starts

    midnight, _ = period_starts(int(time.time() * 1000), user_zone(config))
    params = {"since": midnight, "groupBy": "source"}
    try:
        report = await client.call(m.USAGE_GET, params, timeout=timeout)
    except GsvError:
        return None
    cost = (report.get("total") or {}).get("costUsd")
    return float(cost) if isinstance(cost, int | float) else None


async def count_online_nodes(client: GatewayClient, timeout: float | None = RPC_TIMEOUT) -> int:
    listed = await client.call(m.NODES_LIST, timeout=timeout)
    return sum(1 for node in listed.get("nodes") or [] if node.get("online"))


async def list_sessions(client: GatewayClient, limit: int = 100) -> list[dict[str, Any]]:
    listed = await client.call(m.SESSIONS_LIST, {"limit": limit}, timeout=RPC_TIMEOUT)
    return list(listed.get("sessions") or [])


async def preview(client: GatewayClient, key: str, limit: int) -> list[dict[str, Any]]:
    got = await client.call(m.SESSION_PREVIEW, {"sessionKey": key, "limit": limit})
    return list(got.get("messages") or [])


async def rename(client: GatewayClient, key: str, label: str) -> None:
    await client.call(m.SESSION_PATCH, {"sessionKey": key, "label": label}, timeout=RPC_TIMEOUT)
