"""The Router: method name -> handler, with the dispatch rules of docs/protocol.md#methods.

`Router.handle()` is the one place exceptions become response frames:
1. not connected and method != connect -> 101 "Not connected" (even for unknown methods);
2. unknown method -> 404 "Unknown method: {method}";
3. mode not allowed (the `METHODS` table) -> 403 "Method {method} not allowed for mode";
4. params validated with the method's pydantic model -> 400 naming every bad field in
   `details.errors`, with the original's message where it has one
   (gsv_core/protocol/param_messages.py);
5. the handler's GsvError keeps its code; anything else -> 500 "internal error" on the
   wire, with the traceback in the log only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError

from gsv_core.errors import Forbidden
from gsv_core.errors import GsvError
from gsv_core.errors import InternalError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotConnected
from gsv_core.errors import UnknownMethod
from gsv_core.protocol.frames import encode_error
from gsv_core.protocol.frames import encode_response
from gsv_core.protocol.methods import METHODS
from gsv_core.protocol.methods import MethodSpec
from gsv_core.protocol.param_messages import PARAM_MESSAGES
from gsv_core.protocol.param_messages import ParamMessage
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
        self._add(Route(self._spec(method, replace), handler, params))

    def _spec(self, method: str, replace: bool) -> MethodSpec:
        spec = METHODS.get(method)
        if spec is None:
            raise ValueError(f"{method!r} is not a method of the protocol (protocol.methods)")
        if method in self._routes and not replace:
            raise ValueError(f"{method!r} already has a handler")
        return spec

    def _add(self, route: Route) -> None:
        self._routes[route.spec.name] = route

    def methods(self) -> list[str]:
        """The methods this router really serves, sorted."""
        return sorted(self._routes)

    async def dispatch(self, ctx: RequestContext, method: str, params: Any) -> Any:
        """Run a method for a caller; raises GsvError on any refusal or failure."""
        route, args = self._admit(ctx, method, params)
        return _plain(await route.handler(ctx, args))

    def _admit(self, ctx: RequestContext, method: str, params: Any) -> tuple[Route, Any]:
        """The route and validated params, or the GsvError of rules 1-4."""
        route = self._routes.get(method)
        needs_connect = route.spec.needs_connect if route else True
        if needs_connect and not ctx.peer.connected:
            raise NotConnected("Not connected")
        if route is None:
            raise UnknownMethod(f"Unknown method: {method}")
        if route.spec.needs_connect and ctx.mode not in route.spec.modes:
            raise Forbidden(f"Method {method} not allowed for mode")
        # params are an object; connect checks its own, answering 103
        if params is not None and not isinstance(params, dict) and route.spec.needs_connect:
            raise InvalidParams(f"invalid params for {method}: params must be an object")
        if route.params is not None:
            return route, _validate(method, route.params, params)
        return route, params

    async def handle(self, ctx: RequestContext, method: str, params: Any) -> str:
        """Dispatch and encode the response frame; never raises (except cancellation)."""
        try:
            payload = await self.dispatch(ctx, method, params)
        except Exception as exc:
            return _error_frame(ctx, method, exc)
        return _response_frame(ctx, method, payload)


def _plain(result: Any) -> Any:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", exclude_none=True, by_alias=True)
    return result


def _error_frame(ctx: RequestContext, method: str, exc: BaseException) -> str:
    if isinstance(exc, GsvError):
        return encode_error(ctx.frame_id, exc)
    log.exception("handler for %s failed", method, exc_info=exc)
    return encode_error(ctx.frame_id, InternalError("internal error"))


def _response_frame(ctx: RequestContext, method: str, payload: Any) -> str:
    try:
        return encode_response(ctx.frame_id, payload)
    except (TypeError, ValueError):
        log.exception("result of %s is not JSON-serialisable", method)
        return encode_error(ctx.frame_id, InternalError("internal error"))


def _validate(method: str, model: type[BaseModel], params: Any) -> BaseModel:
    try:
        return model.model_validate({} if params is None else params)
    except ValidationError as exc:
        raise _bad_params(method, exc) from None


def _bad_params(method: str, exc: ValidationError) -> GsvError:
    error = params_error(method, exc)
    known = PARAM_MESSAGES.get(method)
    if known is not None and any(_covered(known, err) for err in exc.errors()):
        return InvalidParams(known.message, details=error.details)
    return error


def _covered(known: ParamMessage, err: Any) -> bool:
    """Whether the original's message for the method is about this error: its fields,
    missing, of the wrong type or empty (or any error, when the message says so)."""
    if not err["loc"] or err["loc"][0] not in known.fields:
        return False
    if known.any_error or err["type"] == "missing":
        return True
    wrong_type = err["type"].endswith(("_type", "_parsing"))
    return wrong_type or err.get("input") in (None, "")


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
