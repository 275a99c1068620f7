"""`auth.invite`, `auth.list`, `auth.revoke`: the owner hands out one-time join codes and
ends credentials (one, a node's or channel's, or every one of a role). Revoking
disconnects the node, adapter or browser at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.errors import NotFound
from gsv_core.gateway.auth import WEB
from gsv_core.gateway.auth import sign_in_ends
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.methods import CHANNEL
from gsv_core.protocol.methods import NODE
from gsv_core.protocol.schemas.auth import AuthInviteParams
from gsv_core.protocol.schemas.auth import AuthInviteResult
from gsv_core.protocol.schemas.auth import AuthListParams
from gsv_core.protocol.schemas.auth import AuthListResult
from gsv_core.protocol.schemas.auth import AuthRevokeParams
from gsv_core.protocol.schemas.auth import AuthRevokeResult
from gsv_core.protocol.schemas.auth import CredentialInfo
from gsv_core.rpc.context import Peer
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.storage.credentials import Credential

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

CLOSE_REVOKED = (CloseCode.UNAUTHORIZED, "Credential revoked")


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)
    auth = gateway.auth

    @route(m.AUTH_INVITE, AuthInviteParams)
    async def invite(ctx: RequestContext, params: AuthInviteParams) -> AuthInviteResult:
        code, expires = await auth.invite(params.role, params.subject, may_replace=params.replace)
        return AuthInviteResult(code=code, role=params.role, subject=params.subject,
                                replace=params.replace, expiresAt=expires)  # fmt: skip

    @route(m.AUTH_LIST, AuthListParams)
    async def list_credentials(ctx: RequestContext, params: AuthListParams) -> AuthListResult:
        found = await auth.store.list_all(include_revoked=params.includeRevoked)
        return AuthListResult(credentials=[_info(gateway, c) for c in found])

    @route(m.AUTH_REVOKE, AuthRevokeParams)
    async def revoke(ctx: RequestContext, params: AuthRevokeParams) -> AuthRevokeResult:
        now = gateway.now_ms()
        if params.id is None:  # `all`, checked by the params model
            assert params.role is not None
            revoked = await auth.store.revoke_role(params.role, now)
        else:
            revoked = await auth.store.revoke(params.id, now, params.role)
        if not revoked and params.id is not None:
            raise NotFound(_nothing_named(params.id, params.role))
        peers = close_sockets_of(gateway, revoked)
        return AuthRevokeResult(
            revoked=[_info(gateway, c) for c in revoked], disconnected=len(peers)
        )


def _nothing_named(ident: str, role: str | None) -> str:
    if role == NODE:
        return f"no active credential of a node, nor node, named {ident!r} (see `gsv nodes list`)"
    if role == CHANNEL:
        return (f"no active credential of a channel adapter, nor channel, named {ident!r} "
                "(see `gsv channels credentials`)")  # fmt: skip
    if role is not None:
        return f"no active credential of a browser named {ident!r} (see `gsv web list`)"
    return f"no active credential or node named {ident!r} (see `gsv nodes list`)"


def close_sockets_of(gateway: Gateway, revoked: list[Credential]) -> list[Peer]:
    """Close (4001) the live connections of credentials just revoked; returns them."""
    peers = [peer for c in revoked for peer in _peers_of(gateway, c)]
    for peer in peers:
        peer.close(*CLOSE_REVOKED)
    return peers


def _peers_of(gateway: Gateway, credential: Credential) -> list[Peer]:
    """The live connections a credential admitted: its node, its channel's adapters, or
    a browser's tabs."""
    if credential.role == NODE:
        node = gateway.nodes.online(credential.subject)
        peers = [node.peer] if node is not None else []
    elif credential.role == CHANNEL:
        peers = [e.peer for e in gateway.registry.channels.values()]
    else:
        peers = list(gateway.registry.clients.values())
    return [peer for peer in peers if peer.credential_id == credential.id]


def _info(gateway: Gateway, credential: Credential) -> CredentialInfo:
    return CredentialInfo(
        id=credential.id,
        role=credential.role,
        subject=credential.subject,
        createdAt=credential.created_at,
        lastUsedAt=credential.last_used_at,
        revokedAt=credential.revoked_at,
        connected=credential.active and bool(_peers_of(gateway, credential)),
        expiresAt=sign_in_ends(credential) if credential.role == WEB else None,
    )
