"""Registering a handler module's methods, with params checked here so that a missing
field gets the original's message (gsv_core/protocol/param_messages.py) and
`details.errors` naming every bad field (docs/protocol.md#error-codes).

Handlers register where they are defined, `@route(METHOD, Params)` with
`route = Routes(router)`; handlers built by a factory go in an `add_routes` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gsv_core.errors import GsvError, InvalidParams
from gsv_core.protocol.param_messages import PARAM_MESSAGES, ParamMessage
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Handler, Router, params_error

# (method, handler, params model or None when the handler takes no params)
Route = tuple[str, Handler, type[BaseModel] | None]


H = TypeVar("H", bound=Handler)


class Routes:
    """`@route(METHOD, Params)` serves METHOD with the function it decorates."""

    def __init__(self, router: Router) -> None:
        self._router = router

    def __call__(self, method: str, params: type[BaseModel] | None = None) -> Callable[[H], H]:
        def register(handler: H) -> H:
            add_routes(self._router, (method, handler, params))
            return handler

        return register


def add_routes(router: Router, *routes: Route) -> None:
    """Serve each method with its handler, validating params with its model first."""
    for method, handler, model in routes:
        router.add(method, handler if model is None else _validating(method, handler, model))


def _validating(method: str, handler: Handler, model: type[BaseModel]) -> Handler:
    # The router still refuses params that are not an object; the model is applied here.
    async def run(ctx: RequestContext, raw: Any) -> Any:
        return await handler(ctx, parse_params(method, model, raw))

    return run


def parse_params(method: str, model: type[BaseModel], raw: Any) -> BaseModel:
    """`raw` as `model`, or InvalidParams (400) with the original's message where it has one."""
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        raise _bad_params(method, exc) from None


def _bad_params(method: str, exc: ValidationError) -> GsvError:
    error = params_error(method, exc)
    known = PARAM_MESSAGES.get(method)
    if known is not None and any(_covered(known, err) for err in exc.errors()):
        return InvalidParams(known.message, details=error.details)
    return error


def _covered(known: ParamMessage, err: Any) -> bool:
    if not err["loc"] or err["loc"][0] not in known.fields:
        return False
    if known.any_error or err["type"] == "missing":
        return True
    wrong_type = err["type"].endswith(("_type", "_parsing"))
    return wrong_type or err.get("input") in (None, "")
