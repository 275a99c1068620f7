"""Who may talk to the agent through a channel: the access decision and
the pending pairing requests of unknown senders.

Policies per channel (`channels.<name>.dmPolicy`): `open` (anyone), `allowlist` (only
`allowFrom`), `pairing` (unknown senders ask the owner first; the default for every
channel). Phone numbers are compared in E.164 form on phone-number channels only, so a
Discord or Telegram id is never mangled. In groups a sender who is not
allowed is ignored silently: pairing is asked for in direct messages only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gsv_core.config import setting
from gsv_core.errors import NotFound
from gsv_core.routing import normalize_e164
from gsv_core.storage.pairing import PairingStore
from gsv_core.storage.pairing import PairRequest

PHONE_CHANNELS = frozenset({"whatsapp", "signal", "sms"})
FIRST_MESSAGE_MAX = 200
AWAITING_APPROVAL = "Your message has been received. Awaiting approval from the owner."
WELCOME = "You're now connected! Feel free to send me a message."

ALLOW = "allow"
PAIR = "pair"
BLOCK = "block"


def pairing_ttl_ms(config: dict[str, Any]) -> int:
    """How long a pairing request stays pending (`pairing.ttlHours`), in milliseconds."""
    return int(setting(config, "pairing.ttlHours")) * 3_600_000


@dataclass(frozen=True)
class AccessDecision:
    verdict: str  # allow | pair | block
    reason: str = ""


def sender_key(channel: str, sender_id: str) -> str:
    """The form a sender id is compared and stored in for a channel."""
    if channel in PHONE_CHANNELS:
        return normalize_e164(sender_id) or sender_id.strip()
    return sender_id.strip()


def is_owner(channel: str, sender_id: str, settings: dict[str, Any] | None) -> bool:
    """Whether a sender is one of the channel's owners (`channels.<name>.owners`),
    compared as the channel normalises ids (E.164 on phone-number channels). A wildcard
    names nobody: an owner is a person."""
    owners = [str(entry) for entry in (settings or {}).get("owners") or [] if entry != "*"]
    return sender_key(channel, sender_id) in {sender_key(channel, o) for o in owners}


def decide(
    channel: str, sender_id: str, peer_id: str, peer_kind: str, settings: dict[str, Any] | None
) -> AccessDecision:
    """May this sender reach the agent? `settings` is `channels.<name>` (None: defaults)."""
    settings = settings or {}
    policy = settings.get("dmPolicy", "pairing")
    if policy == "open":
        return AccessDecision(ALLOW)
    allow_from = [str(entry) for entry in settings.get("allowFrom") or []]
    if "*" in allow_from:
        return AccessDecision(ALLOW)
    wanted = sender_key(channel, sender_id)
    allowed = {sender_key(channel, entry) for entry in allow_from}
    if wanted in allowed or peer_id in allow_from:
        return AccessDecision(ALLOW)
    if peer_kind != "dm":
        return AccessDecision(BLOCK, f"Sender {wanted} is not allowed in groups of {channel}")
    if policy == "allowlist":
        return AccessDecision(BLOCK, f"Sender {wanted} not in allowFrom list")
    return AccessDecision(PAIR)


class PairingService:
    """Pending requests with a time to live (`pairing.ttlHours`)."""

    def __init__(self, store: PairingStore) -> None:
        self.store = store

    async def request(
        self,
        channel: str,
        account_id: str,
        sender_id: str,
        sender_name: str | None,
        peer: dict[str, Any],
        text: str,
        now: int,
        ttl_ms: int,
    ) -> bool:
        """Record a sender's wish to talk; True the first time (the sender is told once),
        False for repeats (counted, silent: one prompt per request, however they insist)."""
        key = sender_key(channel, sender_id)
        existing = await self.store.get(channel, key)
        if existing is not None and existing.requested_at + ttl_ms > now:
            existing.attempts += 1
            existing.last_seen_at = now
            await self.store.save(existing)
            return False
        await self.store.save(
            PairRequest(
                channel, key, sender_name, peer, account_id, text[:FIRST_MESSAGE_MAX], now, now, 1
            )
        )
        return True

    async def pending(self, now: int, ttl_ms: int) -> list[PairRequest]:
        """Requests still open (expired ones are removed on the way)."""
        # expired means `requested_at + ttl <= now`, as take() and request() judge it
        await self.store.expire(now - ttl_ms + 1)
        return await self.store.list()

    async def take(self, channel: str, sender_id: str, now: int, ttl_ms: int) -> PairRequest:
        """Remove and return a pending request (approve/reject); 404 if there is none."""
        key = sender_key(channel, sender_id)
        request = await self.store.get(channel, key)
        if request is None or request.requested_at + ttl_ms <= now:
            raise NotFound(f"No pending pairing for {channel}:{key}")
        await self.store.delete(channel, key)
        return request


def pending_pair_wire(request: PairRequest) -> dict[str, Any]:
    """A pending pairing request as `pair.list` shows it (docs/protocol.md#methods)."""
    wire: dict[str, Any] = {
        "channel": request.channel,
        "senderId": request.sender_id,
        "firstMessage": request.first_message,
        "requestedAt": request.requested_at,
        "accountId": request.account_id,
        "attempts": request.attempts,
    }
    if request.sender_name:
        wire["senderName"] = request.sender_name
    return wire
