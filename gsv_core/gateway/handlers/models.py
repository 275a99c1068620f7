"""`models.list`: ask a configured provider which models it offers (with the gateway's
keys, which never leave it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.models import ModelsListParams, ModelsListResult
from gsv_core.providers.models import list_models
from gsv_core.providers.registry import provider_settings
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway


def register(router: Router, gateway: Gateway) -> None:
    async def models_list(ctx: RequestContext, params: ModelsListParams) -> ModelsListResult:
        config = gateway.config.effective
        configured = config["model"]["provider"]
        name = params.provider or configured
        models = await list_models(provider_settings(config, name))
        current = config["model"]["id"] if name == configured else None
        return ModelsListResult(provider=name, models=models, count=len(models), current=current)

    router.add(m.MODELS_LIST, models_list, ModelsListParams)
