"""`config.get` / `config.set`: masked reads, validated and persisted writes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol.events import CONFIG_CHANGED
from gsv_core.protocol.methods import CONFIG_GET, CONFIG_SET
from gsv_core.protocol.schemas.config import ConfigGetParams, ConfigSetParams, ConfigSetResult
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    service = gateway.config
    gateway.events.add(CONFIG_CHANGED)  # listed in hello-ok's features.events

    @route(CONFIG_GET, ConfigGetParams)
    async def config_get(ctx: RequestContext, params: ConfigGetParams) -> dict[str, Any]:
        if params.path is None:
            return {"config": service.masked}
        found, value = service.get_masked(params.path)
        return {"path": params.path, "value": value} if found else {"path": params.path}

    @route(CONFIG_SET, ConfigSetParams)
    async def config_set(ctx: RequestContext, params: ConfigSetParams) -> ConfigSetResult:
        await service.set(params.path, params.value)
        # the other clients: the caller knows (and a raw caller's next frame is its answer)
        for peer in list(gateway.registry.clients.values()):
            if peer is not ctx.peer:
                peer.send_event(CONFIG_CHANGED, {"path": params.path})  # no value: no secret
        return ConfigSetResult(path=params.path)
