"""`transfer.*`: the steps nodes report, which only the connections taking part
in a transfer may report, and `transfer.request`, a client's transfer with
progress events (`gsv transfer`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.gateway.handlers.routes import add_routes
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.transfers import TransferCompleteParams
from gsv_core.protocol.schemas.transfers import TransferDoneParams
from gsv_core.protocol.schemas.transfers import TransferMetaParams
from gsv_core.protocol.schemas.transfers import TransferRequestParams
from gsv_core.protocol.schemas.transfers import TransferStepParams
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

PROGRESS_EVERY = 0.25  # seconds between progress events


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    service = gateway.transfers

    def step(name: str) -> Any:
        async def handle(ctx: RequestContext, params: TransferStepParams) -> dict[str, bool]:
            service.answer(ctx.peer, name, params.to_wire())
            return {"ok": True}  # unknown or stale transfers are acknowledged, not errors

        return handle

    @route(m.TRANSFER_REQUEST, TransferRequestParams)
    async def transfer_request(
        ctx: RequestContext, params: TransferRequestParams
    ) -> dict[str, Any]:
        agent = params.agentId or gateway.sessions.routing().default_agent
        last = [0.0]

        def progress(done: int, size: int) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY or done == size:
                last[0] = now
                payload = {"source": params.source, "destination": params.destination,
                           "bytes": done, "size": size}  # fmt: skip
                ctx.peer.send_event(events.TRANSFER_PROGRESS, payload)

        return await service.run(params.source, params.destination, agent, progress)

    add_routes(
        router,
        (m.TRANSFER_META, step("meta"), TransferMetaParams),
        (m.TRANSFER_ACCEPT, step("accept"), TransferStepParams),
        (m.TRANSFER_COMPLETE, step("complete"), TransferCompleteParams),
        (m.TRANSFER_DONE, step("done"), TransferDoneParams),
    )
    gateway.events.update({events.TRANSFER_SEND, events.TRANSFER_RECEIVE, events.TRANSFER_START,
                           events.TRANSFER_END, events.TRANSFER_PROGRESS})  # fmt: skip
