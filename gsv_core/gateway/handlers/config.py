"""`config.get` / `config.set`: masked reads, validated and persisted writes; and the
`config.changed` announcement of every write.

Not only `config.set` writes the config: `/budget`, `mcp.add`, a channel's allowlist, the
security audit's fixes and an approval's "always" do too, all through ConfigService. So
the announcement is a ConfigService listener, and every write is heard, whoever made it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol.events import CONFIG_CHANGED
from gsv_core.protocol.methods import CONFIG_GET
from gsv_core.protocol.methods import CONFIG_SET
from gsv_core.protocol.schemas.config import ConfigGetParams
from gsv_core.protocol.schemas.config import ConfigSetParams
from gsv_core.protocol.schemas.config import ConfigSetResult
from gsv_core.rpc.context import Peer
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

# the client whose `config.set` is being stored (its request's task only): it learns from
# its answer, and a raw caller's next frame must be that answer, not the event
_writer: ContextVar[Peer | None] = ContextVar("config_writer", default=None)


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    service = gateway.config
    gateway.events.add(CONFIG_CHANGED)  # listed in hello-ok's features.events

    def announce(path: str) -> None:
        writer = _writer.get()
        for peer in list(gateway.registry.clients.values()):
            if peer is not writer:
                peer.send_event(CONFIG_CHANGED, {"path": path})  # no value: no secret

    service.listeners.append(announce)

    @route(CONFIG_GET, ConfigGetParams)
    async def config_get(ctx: RequestContext, params: ConfigGetParams) -> dict[str, Any]:
        if params.path is None:
            return {"config": service.masked}
        found, value = service.get_masked(params.path)
        return {"path": params.path, "value": value} if found else {"path": params.path}

    @route(CONFIG_SET, ConfigSetParams)
    async def config_set(ctx: RequestContext, params: ConfigSetParams) -> ConfigSetResult:
        writing = _writer.set(ctx.peer)
        try:
            await service.set(params.path, params.value)  # announce() runs in this task
        finally:
            _writer.reset(writing)
        return ConfigSetResult(path=params.path)
