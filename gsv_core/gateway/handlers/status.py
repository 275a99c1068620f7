"""`gateway.status`: one answer to "where do I stand" for `gsv status` and `gsv doctor`:
version and uptime, the model and whether it can be used, nodes, channels, cron, what
waits for the owner, and the database's size. Nothing secret is in it (a key is only
"set" or not)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.errors import GsvError
from gsv_core.protocol import methods as m
from gsv_core.providers.registry import provider_settings
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    async def gateway_status(ctx: RequestContext, params: object) -> dict[str, Any]:
        manager = gateway.channels
        pairs = await manager.pairing.pending(gateway.now_ms(), manager.pairing_ttl_ms())
        return {
            "version": gateway.version,
            "startedAt": gateway.started_at,
            "model": model_status(gateway.config.effective),
            "nodes": [info.to_wire() for info in gateway.nodes.inventory()],
            "channels": await _channels(gateway),
            "cron": gateway.cron.status(),
            "pendingApprovals": len(gateway.approvals.pending()),
            "pendingPairings": len(pairs),
            "budget": {**await gateway.budget.status(), "lastNotice": gateway.budget_notices.last},
            "memory": gateway.memory.build_status(),
            # API keys set aside (rejected, cooling down), by fingerprint: providers/keys.py
            "providerKeys": gateway.keys.status(),
            "storage": await _storage(gateway),
            # tasks on the gateway's event loop: flat over months (bench/soak.py watches it)
            "tasks": len(asyncio.all_tasks()),
        }

    router.add(m.GATEWAY_STATUS, gateway_status)


def model_status(config: dict[str, Any]) -> dict[str, Any]:
    """The model the next message uses, and why it cannot be used (if it cannot)."""
    model = config["model"]
    status: dict[str, Any] = {"provider": model["provider"], "id": model["id"], "ready": True}
    try:
        provider_settings(config, model["provider"])
    except GsvError as exc:
        status.update(ready=False, problem=exc.message)
    return status


async def _storage(gateway: Gateway) -> dict[str, int]:
    """The database file and its WAL on disk, in bytes (a stat each, off the loop)."""
    sizes = await asyncio.to_thread(gateway.db.sizes)
    return {"databaseBytes": sizes.database, "walBytes": sizes.wal}


async def _channels(gateway: Gateway) -> list[dict[str, Any]]:
    found = []
    for record in await gateway.channels.accounts():
        adapter = gateway.channels.adapters.get(record.channel)
        statuses = adapter.status(record.account_id) if adapter else []
        found.append(
            {
                "channel": record.channel,
                "accountId": record.account_id,
                "connected": any(s.connected for s in statuses),
                "error": next((s.error for s in statuses if s.error), None),
            }
        )
    return found
