"""Registering a handler module's methods on the Router, which checks each method's params
with its model before the handler runs (gsv_core/rpc/dispatch.py).

Handlers register where they are defined, `@route(METHOD, Params)` with
`route = Routes(router)`; handlers built by a factory go in an `add_routes` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from gsv_core.rpc.dispatch import Handler
from gsv_core.rpc.dispatch import Router

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
    """Serve each method with its handler, its params checked with its model first."""
    for method, handler, model in routes:
        router.add(method, handler, model)
