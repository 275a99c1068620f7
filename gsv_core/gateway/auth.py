"""Who may connect, and as what: every connection shows a credential.

Four kinds of credential, each good for one role only:

- the owner token (`auth.token`, kept in the local secret store): `mode: client`;
- a node credential: `mode: node`, as the one node id it was issued for;
- a channel credential: `mode: channel`, for the one channel it was issued for;
- a web credential: `mode: client` from a browser, read from the `gsv_web` cookie of the
  WebSocket upgrade (never from `connect` params), for WEB_SESSION_MS (docs/web.md).

Node and channel credentials are minted by redeeming a one-time join code (`auth.invite`,
10 minutes, single use) at `connect` with `auth.joinCode`; the new credential comes back
once in hello-ok. Failed attempts are logged with the peer's address and never the token;
failed join codes are rate limited per address, so 50-bit codes that expire within
minutes cannot be guessed, and one noisy address cannot lock the owner out.
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
# at most this many wrong join codes per window from one address; then its joins wait
JOIN_FAILURES_ALLOWED = 10
JOIN_FAILURE_WINDOW_S = 60.0
# addresses with failures kept before the quiet ones are forgotten
JOIN_SOURCES_KEPT = 1024
UNAUTHORIZED = "Unauthorized: invalid or missing token"
WEB = "web"  # the credential role of a signed-in browser (it connects as a client)
WEB_CODE_TTL_MS = 2 * 60 * 1000  # a sign-in link is opened at once, or not at all
WEB_SESSION_MS = 30 * 24 * 3600 * 1000
SIGNED_OUT = "Unauthorized: this browser is not signed in; run `gsv web` to sign in"


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
        self._join_failures: dict[str, deque[float]] = {}  # address -> times of failures

    async def admit(
        self, params: ConnectParams, remote: str, browser: str | None = None
    ) -> Admission:
        """Check the connect's credential for its mode; raises Unauthorized (401),
        Forbidden (403, a real credential used for a role it was not issued for) or
        RateLimited (429, too many wrong join codes from this address). `remote` is the
        peer's "host:port"; `browser` is the web credential of the socket's cookie, used
        when `connect` names no token."""
        try:
            return await self._admit(params, browser, remote.rpartition(":")[0] or remote)
        except (Unauthorized, Forbidden, RateLimited) as exc:
            client = params.client
            log.warning("refused connect from %s as %s %r: %s", remote, client.mode, client.id, exc)
            raise

    async def _admit(self, params: ConnectParams, browser: str | None, source: str) -> Admission:
        auth = params.auth
        mode = params.client.mode
        if auth is not None and auth.joinCode and mode in (NODE, CHANNEL):
            return Admission(issued=await self._join(auth.joinCode, params, source))
        token = (auth.token if auth else None) or ""
        if not token and browser and mode == CLIENT:
            return Admission(credential=await self._browser(browser))
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

    async def _browser(self, token: str) -> Credential:
        now = self._now_ms()
        credential = await self.store.verify(token, now)
        if credential is None or credential.role != WEB:
            raise Unauthorized(SIGNED_OUT)
        if now - credential.created_at > WEB_SESSION_MS:
            raise Unauthorized(SIGNED_OUT + " (the sign-in is older than 30 days)")
        return credential

    def _is_owner(self, token: str) -> bool:
        owner = self._owner_token()
        # an owner token never has the shape of a node credential's id part, but compare
        # in constant time whatever it looks like
        return owner is not None and hmac.compare_digest(token.encode(), owner.encode())

    async def _redeem(self, code: str, role: str, subject: str, source: str) -> Redeemed | None:
        """The store's redeem behind the limit on wrong codes from `source` (an address)."""
        now = self._monotonic()
        failures = self._recent_failures(source, now)
        if len(failures) >= JOIN_FAILURES_ALLOWED:
            raise RateLimited("too many wrong join codes: wait a minute and try again")
        redeemed = await self.store.redeem(code, role, subject, self._now_ms())
        if redeemed is None:
            failures.append(now)
        return redeemed

    def _recent_failures(self, source: str, now: float) -> deque[float]:
        """The failures of `source` within the window (older ones dropped); addresses
        quiet for a window are forgotten once many are kept."""
        if len(self._join_failures) >= JOIN_SOURCES_KEPT:
            self._join_failures = {
                address: times for address, times in self._join_failures.items()
                if times and now - times[-1] <= JOIN_FAILURE_WINDOW_S
            }  # fmt: skip
        failures = self._join_failures.setdefault(source, deque())
        while failures and now - failures[0] > JOIN_FAILURE_WINDOW_S:
            failures.popleft()
        return failures

    async def sign_in(self, code: str, browser: str, source: str) -> Redeemed:
        """A web sign-in code exchanged for a browser's credential (`browser` names it in
        `gsv web list`; `source` is the request's address); Unauthorized when the code
        is wrong, used or expired."""
        redeemed = await self._redeem(code, WEB, browser, source)
        if redeemed is None:
            raise Unauthorized(
                "This sign-in link is wrong, expired or already used. Links work once, "
                "for two minutes: run `gsv web` again for a new one."
            )
        log.info("browser %r signed in (credential %s)", browser, redeemed.credential.id)
        return redeemed

    async def _join(self, code: str, params: ConnectParams, source: str) -> Redeemed:
        mode = params.client.mode
        subject = _subject(params)
        redeemed = await self._redeem(code, mode, subject, source)
        if redeemed is None:
            raise Unauthorized(
                "Unauthorized: the join code is wrong, expired or already used "
                f"(ask the owner for a new one: `gsv {mode}s invite`)"
            )
        log.info("%s %r joined with a one-time code (credential %s)", mode, subject,
                 redeemed.credential.id)  # fmt: skip
        return redeemed

    async def invite(
        self, role: str, subject: str | None, ttl_ms: int = JOIN_CODE_TTL_MS
    ) -> tuple[str, int]:
        """A one-time join code for a node, a channel adapter or a browser (role `web`),
        and when it expires."""
        now = self._now_ms()
        expires = now + ttl_ms
        return await self.store.add_join_code(role, subject, now, expires), expires
