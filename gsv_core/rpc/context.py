"""Who is calling: the `Peer` a request came from, as handlers see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import Protocol

from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.frames import EncodedEvent


class Peer(Protocol):
    """One connected socket as seen by handlers (implemented by the gateway connection)."""

    connection_id: str
    connected: bool
    mode: str | None
    peer_id: str | None
    remote: str  # the other end's address, for logs
    host: str  # the other end's host without its port: what wrong codes are counted by
    browser: str | None  # the web credential of a browser's cookie, if any
    credential_id: str | None  # the credential `connect` admitted, if not the owner token
    sign_in_ends: int | None  # a browser's socket: when its sign-in ends (epoch ms)
    # the sessions whose conversation events it wants (`chat.subscribe`); None: all
    watching: frozenset[str] | None

    def send_event(self, event: str, payload: Any = None) -> None: ...

    def send_encoded(self, event: EncodedEvent) -> None:
        """`send_event` for an event going to many peers: encoded once for them all."""
        ...

    async def send_binary(self, data: bytes | memoryview) -> None:
        """Queue a binary frame, waiting while too much is queued (backpressure)."""
        ...

    async def alive(self, timeout: float) -> bool:
        """Whether the other end answers a ping within `timeout` seconds."""
        ...

    def close(self, code: int = CloseCode.NORMAL_CLOSURE, reason: str = "") -> None: ...


@dataclass
class RequestContext:
    """The context of one request: the calling peer and the request's frame id."""

    peer: Peer
    frame_id: str | int
    # (code, reason): close the socket once the reply has been sent (bad token -> 4001)
    close_after_reply: tuple[int, str] | None = None

    @property
    def mode(self) -> str | None:
        return self.peer.mode
