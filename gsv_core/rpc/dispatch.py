"""The Router: method name -> handler, with the dispatch rules of spec 2.4.

`Router.handle()` is the one place exceptions become response frames:
1. not connected and method != connect -> 101 "Not connected" (even for unknown methods);
2. unknown method -> 404 "Unknown method: {method}";
3. mode not allowed (the `METHODS` table) -> 403 "Method {method} not allowed for mode";
4. params validated with the method's pydantic model -> 400 naming the fields;
5. the handler's GsvError keeps its code; anything else -> 500 "internal error" on the
   wire, with the traceback in the log only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from gsv_core.errors import (
    Forbidden,
    GsvError,
    InternalError,
    InvalidParams,
    NotConnected,
    UnknownMethod,
)
from gsv_core.protocol.frames import encode_error, encode_response
from gsv_core.protocol.methods import METHODS, MethodSpec
from gsv_core.rpc.context import RequestContext

log = logging.getLogger(__name__)

Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Route:
    spec: MethodSpec
    handler: Handler
    params: type[BaseModel] | None


class Router:
    """Holds one handler per method of the contract; handler modules register on it."""

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}

    def add(
        self,
        method: str,
        handler: Handler,
        params: type[BaseModel] | None = None,
        *,
        replace: bool = False,
    ) -> None:
        """Serve `method` with `handler`; a second handler is a bug unless `replace` (tests
        swap a real handler for a failing one)."""
        spec = METHODS.get(method)
        if spec is None:
            raise ValueError(f"{method!r} is not a method of the protocol (protocol.methods)")
        if method in self._routes and not replace:
            raise ValueError(f"{method!r} already has a handler")
        self._routes[method] = Route(spec, handler, params)

    def methods(self) -> list[str]:
        """The methods this router really serves, sorted."""
        return sorted(self._routes)

    async def dispatch(self, ctx: RequestContext, method: str, params: Any) -> Any:
        """Run a method for a caller; raises GsvError on any refusal or failure."""
        route = self._routes.get(method)
        needs_connect = route.spec.needs_connect if route else True
        if needs_connect and not ctx.peer.connected:
            raise NotConnected("Not connected")
        if route is None:
            raise UnknownMethod(f"Unknown method: {method}")
        if route.spec.needs_connect and ctx.mode not in route.spec.modes:
            raise Forbidden(f"Method {method} not allowed for mode")
        args = _validate(method, route.params, params) if route.params else params
        result = await route.handler(ctx, args)
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json", exclude_none=True, by_alias=True)
        return result

    async def handle(self, ctx: RequestContext, method: str, params: Any) -> str:
        """Dispatch and encode the response frame; never raises (except cancellation)."""
        try:
            payload = await self.dispatch(ctx, method, params)
        except GsvError as exc:
            return encode_error(ctx.frame_id, exc)
        except Exception:
            log.exception("handler for %s failed", method)
            return encode_error(ctx.frame_id, InternalError("internal error"))
        try:
            return encode_response(ctx.frame_id, payload)
        except (TypeError, ValueError):
            log.exception("result of %s is not JSON-serialisable", method)
            return encode_error(ctx.frame_id, InternalError("internal error"))


def _validate(method: str, model: type[BaseModel], params: Any) -> BaseModel:
    try:
        return model.model_validate({} if params is None else params)
    except ValidationError as exc:
        raise params_error(method, exc) from None


def params_error(
    method: str, exc: ValidationError, cls: type[GsvError] = InvalidParams
) -> GsvError:
    """A GsvError naming every bad field of a params validation failure."""
    problems = [
        {"field": ".".join(str(p) for p in err["loc"]) or "params", "message": err["msg"]}
        for err in exc.errors()
    ]
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return cls(f"invalid params for {method}: {summary}", details={"errors": problems})
