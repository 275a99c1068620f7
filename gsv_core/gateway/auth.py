"""Who may connect, and as what: every connection shows a credential.

Three kinds of credential, each good for one role only:

- the owner token (`auth.token`, kept in the local secret store): `mode: client`;
- a node credential: `mode: node`, as the one node id it was issued for;
- a channel credential: `mode: channel`, for the one channel it was issued for.

Node and channel credentials are minted by redeeming a one-time join code (`auth.invite`,
10 minutes, single use) at `connect` with `auth.joinCode`; the new credential comes back
once in hello-ok. Failed attempts are logged with the peer's address and never the token;
failed join codes are rate limited gateway-wide, so 50-bit codes cannot be guessed.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from gsv_core.errors import Forbidden, RateLimited, Unauthorized
from gsv_core.protocol.methods import CHANNEL, CLIENT, NODE
from gsv_core.protocol.schemas.connect import ConnectParams
from gsv_core.storage.credentials import Credential, CredentialStore, Redeemed

log = logging.getLogger(__name__)

JOIN_CODE_TTL_MS = 10 * 60 * 1000
# at most this many wrong join codes per window, gateway-wide; then every join waits
JOIN_FAILURES_ALLOWED = 10
JOIN_FAILURE_WINDOW_S = 60.0
UNAUTHORIZED = "Unauthorized: invalid or missing token"


@dataclass(frozen=True)
class Admission:
    """A successful `connect`: the credential it used, and one freshly minted (join)."""

    credential: Credential | None = None
    issued: Redeemed | None = None


def _subject(params: ConnectParams) -> str:
    """What a credential must name for this connect: the node id or the channel."""
    client = params.client
    return (client.channel or "") if client.mode == CHANNEL else client.id


class Authenticator:
    def __init__(
        self,
        store: CredentialStore,
        owner_token: Callable[[], str | None],
        now_ms: Callable[[], int],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._owner_token = owner_token
        self._now_ms = now_ms
        self._monotonic = monotonic
        self._join_failures: deque[float] = deque()

    async def admit(self, params: ConnectParams, remote: str) -> Admission:
        """Check the connect's credential for its mode; raises Unauthorized (401),
        Forbidden (403, a real credential used for a role it was not issued for) or
        RateLimited (429, too many wrong join codes)."""
        try:
            return await self._admit(params)
        except (Unauthorized, Forbidden, RateLimited) as exc:
            client = params.client
            log.warning("refused connect from %s as %s %r: %s", remote, client.mode, client.id, exc)
            raise

    async def _admit(self, params: ConnectParams) -> Admission:
        auth = params.auth
        mode = params.client.mode
        if auth is not None and auth.joinCode and mode in (NODE, CHANNEL):
            return Admission(issued=await self._join(auth.joinCode, params))
        token = (auth.token if auth else None) or ""
        if self._is_owner(token):
            if mode != CLIENT:
                raise Forbidden(
                    f"the owner token is for clients; a {mode} needs its own credential: "
                    f"run `gsv {mode}s invite` and join with the code"
                )
            return Admission()
        credential = await self.store.verify(token, self._now_ms()) if token else None
        if credential is None:
            raise Unauthorized(UNAUTHORIZED)
        if credential.role != mode or credential.subject != _subject(params):
            raise Forbidden(
                f"this credential was issued to {credential.role} {credential.subject!r}; "
                f"it cannot connect as {mode} {_subject(params)!r}"
            )
        return Admission(credential=credential)

    def _is_owner(self, token: str) -> bool:
        owner = self._owner_token()
        # an owner token never has the shape of a node credential's id part, but compare
        # in constant time whatever it looks like
        return owner is not None and hmac.compare_digest(token.encode(), owner.encode())

    async def _join(self, code: str, params: ConnectParams) -> Redeemed:
        now = self._monotonic()
        while self._join_failures and now - self._join_failures[0] > JOIN_FAILURE_WINDOW_S:
            self._join_failures.popleft()
        if len(self._join_failures) >= JOIN_FAILURES_ALLOWED:
            raise RateLimited("too many wrong join codes: wait a minute and try again")
        mode = params.client.mode
        subject = _subject(params)
        redeemed = await self.store.redeem(code, mode, subject, self._now_ms())
        if redeemed is None:
            self._join_failures.append(now)
            raise Unauthorized(
                "Unauthorized: the join code is wrong, expired or already used "
                f"(ask the owner for a new one: `gsv {mode}s invite`)"
            )
        log.info("%s %r joined with a one-time code (credential %s)", mode, subject,
                 redeemed.credential.id)  # fmt: skip
        return redeemed

    async def invite(self, role: str, subject: str | None) -> tuple[str, int]:
        """A one-time join code for a node or channel adapter, and when it expires."""
        now = self._now_ms()
        expires = now + JOIN_CODE_TTL_MS
        return await self.store.add_join_code(role, subject, now, expires), expires
