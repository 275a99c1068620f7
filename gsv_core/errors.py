"""The gsv error tree: every failure that can cross the wire, each with its protocol code.

    GsvError (500)                      base; anything unexpected is reported as this
    ├── NotConnected (101)              request before a successful `connect`
    ├── UnsupportedProtocol (102)       protocol ranges do not overlap
    ├── InvalidConnectParams (103)      bad `connect` params (mode, tools, runtime)
    ├── InvalidParams (400)             missing or malformed params, bad frame shape
    ├── Unauthorized (401)              bad or missing token
    ├── Forbidden (403)                 method not allowed for the caller's mode, ownership
    ├── NotFound (404)                  unknown method, session, call, file, node tool ...
    │   └── UnknownMethod (404)
    ├── Conflict (409)                  e.g. node still connected
    ├── RateLimited (429)               retryable
    ├── InternalError (500)             "internal error"; details only in the log
    │   └── ToolFailed (500)            a tool ran and failed; the message is the tool's own
    ├── ProviderFailed (502)            the LLM provider failed; retryable
    │   └── ContextOverflow (502)       the request exceeds the model's context window
    ├── Unavailable (503)               node offline, connection closed; retryable
    │   ├── ConnectionClosed (503)
    │   └── GatewayUnreachable (503)    client side: nothing listens at the URL
    └── TimedOut (504)                  a pending operation expired; retryable

Handlers raise these; `gsv_core.rpc.dispatch` is the one place they become ErrorShape
dicts, and `error_from_shape()` rebuilds the most specific class on the client side so
`client.call()` raises what the handler raised. Stdlib only: every layer may import this.
"""

from __future__ import annotations

from typing import Any
from typing import ClassVar


class GsvError(Exception):
    """Base of every gsv error; carries a wire code, a message and optional details."""

    code: ClassVar[int] = 500
    default_retryable: ClassVar[bool] = False

    def __init__(
        self, message: str = "", *, details: Any = None, retryable: bool | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.retryable = self.default_retryable if retryable is None else retryable

    def to_error_shape(self) -> dict[str, Any]:
        """The error shape of docs/protocol.md#frames: `{code, message, details?, retryable?}`."""
        shape: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            shape["details"] = self.details
        if self.retryable:
            shape["retryable"] = True
        return shape

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class NotConnected(GsvError):
    code = 101


class UnsupportedProtocol(GsvError):
    code = 102


class InvalidConnectParams(GsvError):
    code = 103


class InvalidParams(GsvError):
    code = 400


class Unauthorized(GsvError):
    code = 401


class Forbidden(GsvError):
    code = 403


class NotFound(GsvError):
    code = 404


class UnknownMethod(NotFound):
    pass


class Conflict(GsvError):
    code = 409


class RateLimited(GsvError):
    code = 429
    default_retryable = True


class InternalError(GsvError):
    code = 500


class ToolFailed(InternalError):
    """A tool (node or native) ran and failed; its message is safe to show the caller."""


class ProviderFailed(GsvError):
    code = 502
    default_retryable = True


class ContextOverflow(ProviderFailed):
    """The conversation no longer fits the model's context window (compaction helps)."""

    default_retryable = False


class Unavailable(GsvError):
    code = 503
    default_retryable = True


class ConnectionClosed(Unavailable):
    pass


class GatewayUnreachable(Unavailable):
    """The gateway could not be reached at all (connection refused, no route)."""


class TimedOut(GsvError):
    code = 504
    default_retryable = True


# The class rebuilt for each code: the most general class that owns the code.
_BY_CODE: dict[int, type[GsvError]] = {
    cls.code: cls
    for cls in (
        NotConnected,
        UnsupportedProtocol,
        InvalidConnectParams,
        InvalidParams,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        RateLimited,
        InternalError,
        ProviderFailed,
        Unavailable,
        TimedOut,
    )
}


def error_class_for(code: int) -> type[GsvError]:
    """The error class that owns a wire code (GsvError for codes we do not know)."""
    return _BY_CODE.get(code, GsvError)


def error_from_shape(shape: Any) -> GsvError:
    """Rebuild an exception from an ErrorShape received on the wire.

    A malformed shape still becomes a GsvError (500) rather than crashing the reader.
    """
    if not isinstance(shape, dict):
        return GsvError(f"malformed error from peer: {shape!r}")
    code = shape.get("code")
    message = shape.get("message")
    cls = error_class_for(code) if isinstance(code, int) else GsvError
    err = cls(
        message if isinstance(message, str) else "unknown error",
        details=shape.get("details"),
        # to_error_shape() leaves `retryable` out when false, so absent means false
        retryable=bool(shape.get("retryable", False)),
    )
    if cls is GsvError and isinstance(code, int):
        err.code = code  # type: ignore[misc]  # keep an unknown code visible to the caller
    return err
