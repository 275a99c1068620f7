"""The durable outbox: a reply to a channel is written to the database before it is
sent, and deleted once the platform (or the external adapter's connection) took it.

What goes through it: the agent's replies to a channel conversation (partial, final and
error lines of runs born in a channel, and cron deliveries). Sends whose caller wants the
answer now go direct and fail at once: approval prompts with buttons (edited later),
pairing prompts and welcomes, `gsv__Message`, heartbeat deliveries.

A send that fails for a reason that can pass -- the account's adapter or bridge is not
connected, it is reconnecting, the platform answered 5xx or 429, it did not answer in
time (a GsvError marked `retryable`) -- leaves the reply stored; it is tried again with
backoff (2 s, doubling, at most 5 min; longer when the platform asks, `retryAfter`), at
once when the account connects again, and after a gateway restart. Replies of one
account go out in order: a later reply waits behind an earlier one. A reply older than
`channels.outboxMaxAgeHours` (default 24) is dropped with a warning in the log; a send
the platform refuses for good (bad request, blocked bot) is dropped the same way.

Each reply is sent once: it is deleted as soon as the send returns. Only a gateway killed
in the instant between the platform's answer and that delete could send it again after
the restart; we prefer that to losing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from collections.abc import Callable

from gsv_core.errors import GsvError
from gsv_core.storage.outbox import Answer
from gsv_core.storage.outbox import NewReply
from gsv_core.storage.outbox import OutboxStore
from gsv_core.storage.outbox import StoredReply

log = logging.getLogger(__name__)

RETRY_BASE_MS = 2_000
RETRY_CAP_MS = 300_000
MAX_SLEEP_S = 60.0  # look again at least this often (the clock may have jumped)
MIN_SLEEP_S = 0.1

SendOne = Callable[[StoredReply], Awaitable[object]]


def backoff_ms(attempts: int, exc: GsvError) -> int:
    """How long after its `attempts`-th failed try a reply is tried again."""
    delay: int = min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** min(attempts, 20))
    details = exc.details if isinstance(exc.details, dict) else {}
    asked = details.get("retryAfter")
    if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
        delay = max(delay, round(asked * 1000))
    return delay


class ReplyQueue:
    def __init__(
        self,
        store: OutboxStore,
        send: SendOne,
        now_ms: Callable[[], int],
        max_age_ms: Callable[[], int],
    ) -> None:
        self.store = store
        self._send = send
        self._now = now_ms
        self._max_age_ms = max_age_ms
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._wake = asyncio.Event()

    async def put(self, replies: list[NewReply], answers: Answer | None = None) -> None:
        """Store the pieces of one reply (to one account), then send what can go now.
        `answers`: (inbound journal entry, run id) of a run's final reply; a run's reply
        to an entry it answered already is not sent again."""
        if not await self.store.add(replies, self._now(), answers):
            log.info("inbound message %s is answered already: not sending it twice", answers)
            return
        for channel, account_id in dict.fromkeys((r.channel, r.account_id) for r in replies):
            await self.flush(channel, account_id)

    async def account_back(self, channel: str, account_id: str) -> None:
        """An account (re)connected: what waits for it goes now."""
        await self.store.due_now(channel, account_id, self._now())
        self._wake.set()

    async def flush(self, channel: str, account_id: str) -> None:
        """Send an account's due replies in order, stopping at one that must wait."""
        lock = self._locks.setdefault((channel, account_id), asyncio.Lock())
        async with lock:
            for stored in await self.store.pending(channel, account_id):
                if not await self._try(stored):
                    return

    async def _try(self, stored: StoredReply) -> bool:
        """One try of one reply; False when the replies behind it must wait."""
        now = self._now()
        reply = stored.reply
        if stored.created_at < now - self._max_age_ms():
            log.warning("dropped a reply to %s:%s kept since %d (channels.outboxMaxAgeHours)",
                        reply.channel, reply.account_id, stored.created_at)  # fmt: skip
            await self.store.delete(stored.id)
            return True
        if stored.next_attempt_at > now:
            return False
        try:
            await self._send(stored)
        except GsvError as exc:
            if exc.retryable:
                until = now + backoff_ms(stored.attempts, exc)
                await self.store.postpone(stored.id, until, exc.message)
                return False
            log.warning("dropped a reply to %s:%s the platform refused: %s",
                        reply.channel, reply.account_id, exc.message)  # fmt: skip
        except Exception:  # an adapter bug: retrying cannot help, the rest must go on
            log.exception("sending a reply to %s:%s failed", reply.channel, reply.account_id)
        await self.store.delete(stored.id)
        return True

    async def run(self) -> None:
        """Retry what waits, until cancelled: when the head of an account's queue is due,
        or at once when woken (an account connected)."""
        while True:
            self._wake.clear()
            try:
                delay = await self._flush_all()
            except Exception:  # the retrier must outlive one bad round
                log.exception("retrying queued channel replies failed")
                delay = MAX_SLEEP_S
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _flush_all(self) -> float:
        for waiting in await self.store.summary():
            await self.flush(waiting.channel, waiting.account_id)
        heads = [w.next_attempt_at for w in await self.store.summary()]
        if not heads:
            return MAX_SLEEP_S
        return min(MAX_SLEEP_S, max(MIN_SLEEP_S, (min(heads) - self._now()) / 1000))
