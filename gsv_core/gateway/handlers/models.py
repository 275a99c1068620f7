"""`models.list` and `models.test`: ask a configured provider which models it offers, and
make one tiny live call to a model (with the gateway's keys, which never leave it), then
probe how it calls tools and say its context window."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.agent.compaction import context_window
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.models import ModelsListParams
from gsv_core.protocol.schemas.models import ModelsListResult
from gsv_core.protocol.schemas.models import ModelsTestParams
from gsv_core.protocol.schemas.models import ModelsTestResult
from gsv_core.providers.models import list_models
from gsv_core.providers.models import test_call
from gsv_core.providers.registry import provider_settings
from gsv_core.providers.tool_probe import probe_tool_calls
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    def config_with(settings: dict[str, Any] | None) -> dict[str, Any]:
        """The effective config, or the one `settings` would make (unsaved)."""
        return gateway.config.preview(settings) if settings else gateway.config.effective

    @route(m.MODELS_LIST, ModelsListParams)
    async def models_list(ctx: RequestContext, params: ModelsListParams) -> ModelsListResult:
        config = config_with(params.settings)
        configured = config["model"]["provider"]
        name = params.provider or configured
        models = await list_models(provider_settings(config, name))
        current = config["model"]["id"] if name == configured else None
        return ModelsListResult(provider=name, models=models, count=len(models), current=current)

    @route(m.MODELS_TEST, ModelsTestParams)
    async def models_test(ctx: RequestContext, params: ModelsTestParams) -> ModelsTestResult:
        config = config_with(params.settings)
        provider = params.provider or config["model"]["provider"]
        model = params.model or config["model"]["id"]
        started = time.monotonic()
        reply = await test_call(config, provider, model, timeout=60)
        took = int((time.monotonic() - started) * 1000)
        if not params.settings:  # the key the test used answered: it is no longer set aside
            await gateway.keys.clear(provider, provider_settings(config, provider).api_key)
        calls = await probe_tool_calls(config, provider, model, timeout=60)
        reported = await gateway.windows.get(provider_settings(config, provider), model)
        window = context_window(config, provider, model, reported)
        return ModelsTestResult(provider=provider, model=model, reply=reply, ms=took,
                                toolCalls=calls, contextWindow=window,
                                contextWindowReported=reported)  # fmt: skip
