"""`auth.*` (gsv additions): one-time join codes and the credentials of nodes
and channel adapters. Owner (client mode) only."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from gsv_core.protocol.schemas import WireModel

Role = Literal["node", "channel"]  # who joins with a code
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=256)]


class AuthInviteParams(WireModel):
    role: Role = "node"
    # the node id (or channel) the code is for; None: whichever id joins with it, unless
    # that id already has a credential (active or revoked) ...
    subject: Name | None = None
    # ... and `replace`: even then (the id's credentials are revoked when it joins)
    replace: bool = False


class AuthInviteResult(WireModel):
    code: str
    role: Role
    subject: str | None = None
    replace: bool = False
    expiresAt: int


class CredentialInfo(WireModel):
    id: str
    role: str
    subject: str
    createdAt: int
    lastUsedAt: int | None = None
    revokedAt: int | None = None
    connected: bool = False


class AuthListParams(WireModel):
    includeRevoked: bool = False


class AuthListResult(WireModel):
    credentials: list[CredentialInfo]


class AuthRevokeParams(WireModel):
    id: Name  # a credential id, or a node id / channel name (all its credentials)


class AuthRevokeResult(WireModel):
    revoked: list[CredentialInfo]
    disconnected: int
