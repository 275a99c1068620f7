"""`auth.*` (gsv additions): one-time join codes and the credentials of nodes,
channel adapters and signed-in browsers. Owner (client mode) only."""

from __future__ import annotations

from typing import Annotated
from typing import Literal

from pydantic import Field
from pydantic import StringConstraints
from pydantic import ValidationInfo
from pydantic import field_validator

from gsv_core.protocol.schemas import WireModel

Role = Literal["node", "channel"]  # who joins with a code
CredentialRole = Literal["node", "channel", "web"]  # who holds a credential (web: a browser)
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
    expiresAt: int | None = None  # a browser's sign-in ends then (web credentials only)


class AuthListParams(WireModel):
    includeRevoked: bool = False


class AuthListResult(WireModel):
    credentials: list[CredentialInfo]


class AuthRevokeParams(WireModel):
    role: CredentialRole | None = None  # only credentials of this role
    all: bool = False  # every active credential of `role` (`gsv web revoke --all`)
    # a credential id, or a node id / channel name (all its credentials); not with `all`
    id: Name | None = Field(default=None, validate_default=True)

    @field_validator("all")
    @classmethod
    def _all_of_a_role(cls, everything: bool, info: ValidationInfo) -> bool:
        if everything and info.data.get("role") is None:
            raise ValueError("`all` revokes every credential of one `role`: node, channel or web")
        return everything

    @field_validator("id")
    @classmethod
    def _one_target(cls, ident: str | None, info: ValidationInfo) -> str | None:
        if "all" not in info.data:  # `all` itself was refused: that error says enough
            return ident
        everything = info.data["all"]
        if everything and ident is not None:
            raise ValueError("give `id` or `all`, not both")
        if not everything and ident is None:
            raise ValueError(
                "Field required (a credential, node or channel; or `all` and a `role`)"
            )
        return ident


class AuthRevokeResult(WireModel):
    revoked: list[CredentialInfo]
    disconnected: int
