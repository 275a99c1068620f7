"""Channel methods (docs/protocol.md#methods): accounts of in-process adapters, and
`channel.inbound` for external adapters, which may only speak for the channel and
account they connected as: no adapter speaks for another."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.channels.inbound import from_wire
from gsv_core.errors import Forbidden
from gsv_core.errors import NotFound
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.gateway.handlers.routes import add_routes
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.channels import ChannelInboundParams
from gsv_core.protocol.schemas.channels import ChannelLoginParams
from gsv_core.protocol.schemas.channels import ChannelParams
from gsv_core.protocol.schemas.channels import ChannelStartParams
from gsv_core.protocol.schemas.channels import ChannelStatusParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Handler
from gsv_core.rpc.dispatch import Router
from gsv_core.storage.outbox import QueueSummary

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    manager = gateway.channels

    @route(m.CHANNELS_LIST)
    async def channels_list(ctx: RequestContext, params: object) -> dict[str, Any]:
        entries: dict[tuple[str, str], dict[str, Any]] = {}
        for record in await manager.accounts():
            adapter = manager.adapters.get(record.channel)
            statuses = adapter.status(record.account_id) if adapter else []
            running = any(status.connected for status in statuses)
            entries[(record.channel, record.account_id)] = _entry(
                record.channel,
                record.account_id,
                record.connected_at,
                record.last_message_at,
                running,
            )
        for entry in gateway.registry.channels.values():
            key = (entry.channel, entry.account_id)
            known = entries.get(key, {})
            entries[key] = _entry(entry.channel, entry.account_id, entry.connected_at,
                                  known.get("lastMessageAt"), True, mode="websocket")  # fmt: skip
        listed = [entries[key] for key in sorted(entries)]
        return {"channels": listed, "count": len(listed)}

    @route(m.CHANNEL_START, ChannelStartParams)
    async def channel_start(ctx: RequestContext, params: ChannelStartParams) -> dict[str, Any]:
        await manager.start(params.channel, params.accountId, params.config)
        return _account_ack(params)

    @route(m.CHANNEL_STATUS, ChannelStatusParams)
    async def channel_status(ctx: RequestContext, params: ChannelStatusParams) -> dict[str, Any]:
        queued = {
            account_id: summary
            for (channel, account_id), summary in (await manager.queued_replies()).items()
            if channel == params.channel and params.accountId in (None, account_id)
        }
        try:
            accounts = [a.to_wire() for a in manager.status(params.channel, params.accountId)]
        except NotFound:
            if not queued:  # an external channel that is away, but has replies waiting
                raise
            accounts = []
        return {"channel": params.channel, "accounts": _with_queued(accounts, queued)}

    @route(m.CHANNEL_LOGIN, ChannelLoginParams)
    async def channel_login(ctx: RequestContext, params: ChannelLoginParams) -> dict[str, Any]:
        result = await manager.login(params.channel, params.accountId, params.force)
        answer = {**_account_ack(params), "message": result.message}
        if result.qr_data_url:
            answer["qrDataUrl"] = result.qr_data_url
        return answer

    @route(m.CHANNEL_INBOUND, ChannelInboundParams)
    async def channel_inbound(ctx: RequestContext, params: ChannelInboundParams) -> dict[str, Any]:
        registered = gateway.registry.channels.get(f"{params.channel}:{params.accountId}")
        if registered is None or registered.peer is not ctx.peer:
            raise Forbidden(
                f"this connection does not serve {params.channel}:{params.accountId} "
                "(connect in channel mode with that channel and accountId)"
            )
        message = from_wire(params.to_wire())
        return await manager.inbox.receive(message, wait=True)

    add_routes(
        router,
        (m.CHANNEL_STOP, _account_change(manager.stop), ChannelParams),
        (m.CHANNEL_LOGOUT, _account_change(manager.logout), ChannelParams),
    )
    gateway.events.update({events.CHANNEL_OUTBOUND, events.CHANNEL_TYPING})


def _with_queued(
    accounts: list[dict[str, Any]], queued: dict[str, QueueSummary]
) -> list[dict[str, Any]]:
    """Account statuses with `queuedReplies` where replies wait (gsv_core.channels.
    reply_queue); an account with replies waiting is listed even when it is not running."""
    listed = {account["accountId"] for account in accounts}
    away = [{"accountId": account_id, "connected": False, "authenticated": False}
            for account_id in sorted(queued) if account_id not in listed]  # fmt: skip
    result = []
    for account in [*accounts, *away]:
        summary = queued.get(account["accountId"])
        result.append({**account, "queuedReplies": summary.to_wire()} if summary else account)
    return result


def _entry(
    channel: str,
    account_id: str,
    connected_at: int | None,
    last_message_at: int | None,
    connected: bool,
    mode: str = "in-process",
) -> dict[str, Any]:
    entry: dict[str, Any] = {"channel": channel, "accountId": account_id,
                             "connected": connected, "mode": mode}  # fmt: skip
    if connected_at is not None:
        entry["connectedAt"] = connected_at
    if last_message_at is not None:
        entry["lastMessageAt"] = last_message_at
    return entry


def _account_change(change: Callable[[str, str], Awaitable[None]]) -> Handler:
    """A method that applies `change` to one account (channel, account id), then says so."""

    async def handle(ctx: RequestContext, params: ChannelParams) -> dict[str, Any]:
        await change(params.channel, params.accountId)
        return _account_ack(params)

    return handle


def _account_ack(params: ChannelParams) -> dict[str, Any]:
    """The answer of the account methods: which account the change applied to."""
    return {"ok": True, "channel": params.channel, "accountId": params.accountId}
