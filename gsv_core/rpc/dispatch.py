"""The Router: method name -> handler, with the dispatch rules of spec 2.4.

`Router.handle()` is the one place exceptions become response frames:
1. not connected and method != connect -> 101 "Not connected" (even for unknown methods);
2. unknown method -> 404 "Unknown method: {method}";
3. mode not allowed (the `METHODS` table) -> 403 "Method {method} not allowed for mode";
4. params validated with the method's pydantic model -> 400 naming the fields;
5. the handler's GsvError keeps its code; anything else -> 500 "internal error" on the
   wire, with the traceback in the log only.

Most handlers are coroutines, each run in a task of its own. Two kinds skip the task:
- `add_now()`: a plain function that never waits (a node's answer settling a pending
  call); `handle_now()` answers it on the spot.
- `add_deferred()`: a function that starts the work and returns at once, calling `done`
  with a settled future later (`tool.invoke`: the node's answer completes it);
  `start_deferred()` sends the response the moment that happens.
"""

from __future__ import annotations

import asyncio
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
ImmediateHandler = Callable[[RequestContext, Any], Any]
# called once with (result, None) or (None, error) when deferred work settles
Settle = Callable[[Any, BaseException | None], None]
# (ctx, params, done) -> cancel: calls `done` once the work settles; `cancel()` abandons it
DeferredHandler = Callable[[RequestContext, Any, Settle], Callable[[], None]]


@dataclass(frozen=True)
class Route:
    spec: MethodSpec
    handler: Callable[..., Any]  # Handler, ImmediateHandler or DeferredHandler, by the flags
    params: type[BaseModel] | None
    immediate: bool = False
    deferred: bool = False


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

    def add_now(
        self, method: str, handler: ImmediateHandler, params: type[BaseModel] | None = None
    ) -> None:
        """Serve `method` with a plain function that never waits (see `handle_now`)."""
        self._add(Route(self._spec(method, False), handler, params, immediate=True))

    def add_deferred(
        self, method: str, handler: DeferredHandler, params: type[BaseModel] | None = None
    ) -> None:
        """Serve `method` with a function that starts the work (see `start_deferred`)."""
        self._add(Route(self._spec(method, False), handler, params, deferred=True))

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

    def answers_now(self, method: str) -> bool:
        """True when `method` was registered with `add_now()`."""
        route = self._routes.get(method)
        return route is not None and route.immediate

    def is_deferred(self, method: str) -> bool:
        """True when `method` was registered with `add_deferred()`."""
        route = self._routes.get(method)
        return route is not None and route.deferred

    async def dispatch(self, ctx: RequestContext, method: str, params: Any) -> Any:
        """Run a method for a caller; raises GsvError on any refusal or failure."""
        route, args = self._admit(ctx, method, params)
        if route.deferred:
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            cancel = route.handler(ctx, args, lambda res, err: _settle(future, res, err))
            try:
                return _plain(await future)
            finally:
                if not future.done():
                    cancel()
        result = route.handler(ctx, args)
        if not route.immediate:
            result = await result
        return _plain(result)

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
        return route, _validate(method, route.params, params) if route.params else params

    async def handle(self, ctx: RequestContext, method: str, params: Any) -> str:
        """Dispatch and encode the response frame; never raises (except cancellation)."""
        try:
            payload = await self.dispatch(ctx, method, params)
        except Exception as exc:
            return _error_frame(ctx, method, exc)
        return _response_frame(ctx, method, payload)

    def handle_now(self, ctx: RequestContext, method: str, params: Any) -> str:
        """`handle()` for a method registered with `add_now()`: answered on the spot."""
        try:
            route, args = self._admit(ctx, method, params)
            if not route.immediate:
                raise InternalError(f"{method} is not answered on the spot")
            payload = _plain(route.handler(ctx, args))
        except Exception as exc:
            return _error_frame(ctx, method, exc)
        return _response_frame(ctx, method, payload)

    def start_deferred(
        self, ctx: RequestContext, method: str, params: Any, reply: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """Start a method registered with `add_deferred()`; `reply(frame)` is called once
        with its response. Returns the function that abandons it (None: answered now)."""
        try:
            route, args = self._admit(ctx, method, params)
            if not route.deferred:
                raise InternalError(f"{method} is not a deferred method")

            def done(result: Any, error: BaseException | None) -> None:
                if error is None:
                    reply(_response_frame(ctx, method, _plain(result)))
                else:
                    reply(_error_frame(ctx, method, error))

            cancel: Callable[[], None] = route.handler(ctx, args, done)
        except Exception as exc:
            reply(_error_frame(ctx, method, exc))
            return None
        return cancel


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


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
