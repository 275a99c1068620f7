"""Who may connect, and as what: every connection shows a credential.

Four kinds of credential, each good for one role only:

- the owner token (`auth.token`, kept in the local secret store): `mode: client`;
- a node credential: `mode: node`, as the one node id it was issued for;
- a channel credential: `mode: channel`, for the one channel it was issued for;
- a web credential: `mode: client` from a browser, read from the sign-in cookie of a
  WebSocket upgrade with an allowed Origin (never from `connect` params, never without
  an Origin), for WEB_SESSION_MS (docs/web.md).

Node and channel credentials are minted by a one-time join code (`auth.invite`, 10
minutes, single use) at `connect` with `auth.joinCode`. `admit` only checks the code
for the id the peer names (a code made without one cannot take an id that has a
credential unless the owner said `replace`); `accept` spends it, once the connection is
accepted, and the new credential comes back once in hello-ok. A refused connect changes
nothing. Failed attempts are logged with the peer's address and never the token;
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

from gsv_core.errors import Forbidden
from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized
from gsv_core.protocol.methods import CHANNEL
from gsv_core.protocol.methods import CLIENT
from gsv_core.protocol.methods import NODE
from gsv_core.protocol.schemas.connect import ConnectParams
from gsv_core.storage.credentials import Credential
from gsv_core.storage.credentials import CredentialStore
from gsv_core.storage.credentials import JoinCheck
from gsv_core.storage.credentials import Redeemed

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
JOIN_LOST = (
    "Unauthorized: the join code was used by another connection meanwhile "
    "(ask the owner for a new one: `gsv {mode}s invite`)"
)


@dataclass(frozen=True)
class Join:
    """A join code checked for the id a connect names, not spent yet (`accept` spends it)."""

    code: str
    role: str
    subject: str


@dataclass(frozen=True)
class Admission:
    """A `connect` that may go on: the credential it showed, or the join code it brings."""

    credential: Credential | None = None
    join: Join | None = None


def _taken(mode: str, subject: str, known: bool = False) -> Forbidden:
    """A code made for no id in particular, naming one that has a credential (or, with
    `known`, a node the gateway has seen without one)."""
    what = (
        f"Join under another node id, or ask the owner for `gsv nodes invite --id {subject}` "
        "(or `gsv nodes invite --replace`)"
        if mode == NODE
        else f"Ask the owner for `gsv {mode}s invite {subject}`"
    )
    held = "is known to this gateway" if known else "already has a credential"
    return Forbidden(
        f"{mode} {subject!r} {held}: a join code made for no {mode} in "
        f"particular cannot take it. {what}"
    )


def sign_in_ends(credential: Credential) -> int:
    """When a browser's sign-in ends (epoch ms): its sockets close, its cookie is refused."""
    return credential.created_at + WEB_SESSION_MS


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
        self, params: ConnectParams, remote: str, host: str, browser: str | None = None
    ) -> Admission:
        """Check the connect's credential for its mode; raises Unauthorized (401),
        Forbidden (403, a real credential used for a role it was not issued for) or
        RateLimited (429, too many wrong join codes from this host). `remote` is the
        peer's "host:port" (for the log), `host` its host (gateway/peer_address.py);
        `browser` is the web credential of the socket's cookie, used when `connect` names
        no token."""
        try:
            return await self._admit(params, browser, host)
        except (Unauthorized, Forbidden, RateLimited) as exc:
            client = params.client
            log.warning("refused connect from %s as %s %r: %s", remote, client.mode, client.id, exc)
            raise

    async def _admit(self, params: ConnectParams, browser: str | None, source: str) -> Admission:
        auth = params.auth
        mode = params.client.mode
        if auth is not None and auth.joinCode and mode in (NODE, CHANNEL):
            return Admission(join=await self._check_join(auth.joinCode, params, source))
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
        if now >= sign_in_ends(credential):
            raise Unauthorized(SIGNED_OUT + " (the sign-in is older than 30 days)")
        return credential

    def _is_owner(self, token: str) -> bool:
        owner = self._owner_token()
        # an owner token never has the shape of a node credential's id part, but compare
        # in constant time whatever it looks like
        return owner is not None and hmac.compare_digest(token.encode(), owner.encode())

    def _allow_attempt(self, source: str) -> deque[float]:
        """The recent wrong codes of `source` (an address); RateLimited past the limit."""
        failures = self._recent_failures(source, self._monotonic())
        if len(failures) >= JOIN_FAILURES_ALLOWED:
            raise RateLimited("too many wrong join codes: wait a minute and try again")
        return failures

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
        failures = self._allow_attempt(source)
        redeemed = await self.store.redeem(code, WEB, browser, self._now_ms())
        if redeemed is None:
            failures.append(self._monotonic())
            raise Unauthorized(
                "This sign-in link is wrong, expired or already used. Links work once, "
                "for two minutes: run `gsv web` again for a new one."
            )
        log.info("browser %r signed in (credential %s)", browser, redeemed.credential.id)
        return redeemed

    async def _check_join(self, code: str, params: ConnectParams, source: str) -> Join:
        """The join code checked for the id this connect names; nothing is spent."""
        mode = params.client.mode
        subject = _subject(params)
        failures = self._allow_attempt(source)
        checked = await self.store.check_join(code, mode, subject, self._now_ms())
        if checked is JoinCheck.INVALID:
            failures.append(self._monotonic())
            raise Unauthorized(
                "Unauthorized: the join code is wrong, expired or already used "
                f"(ask the owner for a new one: `gsv {mode}s invite`)"
            )
        if checked in (JoinCheck.TAKEN, JoinCheck.KNOWN):
            raise _taken(mode, subject, known=checked is JoinCheck.KNOWN)
        return Join(code, mode, subject)

    async def accept(self, admission: Admission) -> Redeemed | None:
        """The connection is accepted: spend its join code, if it brought one, for the
        credential hello-ok returns (the subject's earlier ones are revoked in the same
        transaction); Unauthorized when another connect spent the code meanwhile."""
        join = admission.join
        if join is None:
            return None
        redeemed = await self.store.redeem(join.code, join.role, join.subject, self._now_ms())
        if redeemed is None:
            raise Unauthorized(JOIN_LOST.format(mode=join.role))
        log.info("%s %r joined with a one-time code (credential %s%s)", join.role, join.subject,
                 redeemed.credential.id,
                 f"; revoked {', '.join(c.id for c in redeemed.replaced)}" if redeemed.replaced
                 else "")  # fmt: skip
        return redeemed

    async def invite(
        self,
        role: str,
        subject: str | None,
        ttl_ms: int = JOIN_CODE_TTL_MS,
        may_replace: bool = False,
    ) -> tuple[str, int]:
        """A one-time join code for a node, a channel adapter or a browser (role `web`),
        and when it expires; `may_replace`: a code for no subject in particular may take
        one that already has a credential."""
        now = self._now_ms()
        expires = now + ttl_ms
        code = await self.store.add_join_code(role, subject, now, expires, may_replace)
        return code, expires
