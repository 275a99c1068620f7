"""Key pools (docs/models.md#key-pools): a provider may have several API keys
(`apiKeys.<name>` or `providers.<name>.apiKey` as a list), tried in turn. A key whose
provider refuses it is set aside by what the refusal means:

* 401/403, a rejected key: not tried again until the owner sets or tests it;
* 429 rate limited: cooling down for the provider's retry-after (else a minute);
* 402 or insufficient quota: cooling down for a day, or until the owner sets or tests it.

Marks are kept in SQLite (storage/provider_keys.py) so they survive a restart, and are
named by a fingerprint (`key-` and 8 hex digits of its SHA-256), never by the key.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Sequence
from typing import Any

from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.providers.failover import failure_reason
from gsv_core.storage.provider_keys import COOLING
from gsv_core.storage.provider_keys import REJECTED
from gsv_core.storage.provider_keys import KeyMark
from gsv_core.storage.provider_keys import ProviderKeyStore

log = logging.getLogger(__name__)

RATE_LIMIT_COOLDOWN_MS = 60_000
QUOTA_COOLDOWN_MS = 24 * 3_600_000
# failure_reason() words -> (state, cooldown ms) of the key that met them
_SET_ASIDE = {
    "key rejected": (REJECTED, None),
    "access refused": (REJECTED, None),
    "rate limited": (COOLING, RATE_LIMIT_COOLDOWN_MS),
    "out of quota": (COOLING, QUOTA_COOLDOWN_MS),
}


def fingerprint(key: str) -> str:
    """A key's name in logs, status and the database: no character of the key itself."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:8]


class KeyPool:
    """Which keys of a provider may be tried now, and setting aside those refused."""

    def __init__(self, store: ProviderKeyStore, now_ms: Callable[[], int]) -> None:
        self._store = store
        self._now_ms = now_ms
        self._marks: dict[tuple[str, str], KeyMark] = {}

    async def load(self) -> None:
        self._marks = {(m.provider, m.fingerprint): m for m in await self._store.load()}

    def usable(self, provider: str, keys: Sequence[str]) -> list[str]:
        """`keys` that may be tried now, in order; ProviderFailed when none may."""
        now = self._now_ms()
        usable = [key for key in keys if not self._aside(provider, fingerprint(key), now)]
        if keys and not usable:
            raise ProviderFailed(
                f"every API key of {provider} is set aside "
                f"({self._why(provider, keys)}); see gsv status"
            )
        return usable

    def _aside(self, provider: str, print_: str, now: int) -> KeyMark | None:
        mark = self._marks.get((provider, print_))
        if mark is None or (mark.state == COOLING and (mark.until or 0) <= now):
            return None
        return mark

    def _why(self, provider: str, keys: Sequence[str]) -> str:
        marks = [self._marks.get((provider, fingerprint(key))) for key in keys]
        return ", ".join(f"{m.fingerprint} {m.reason}" for m in marks if m is not None)

    async def report(self, provider: str, key: str, error: GsvError) -> bool:
        """Set `key` aside when `error` is about the key; True when it was (another key
        may then answer)."""
        reason = failure_reason(error)
        aside = _SET_ASIDE.get(reason)
        if aside is None:
            return False
        state, cooldown = aside
        now = self._now_ms()
        if reason == "rate limited" and isinstance(error.details, dict):
            cooldown = int(error.details.get("retryAfterMs") or cooldown or 0) or cooldown
        until = now + cooldown if cooldown is not None else None
        mark = KeyMark(provider, fingerprint(key), state, until, reason, now)
        self._marks[(provider, mark.fingerprint)] = mark
        log.warning("%s API key %s set aside: %s", provider, mark.fingerprint, reason)
        await self._store.put(mark)
        return True

    async def clear(self, provider: str, key: str | None = None) -> None:
        """The owner set the provider's keys (every mark of it goes) or tested `key`
        (only its mark goes: the others were not tried)."""
        print_ = fingerprint(key) if key is not None else None
        self._marks = {
            k: m for k, m in self._marks.items()
            if m.provider != provider or (print_ is not None and m.fingerprint != print_)
        }  # fmt: skip
        await self._store.clear(provider, print_)

    def config_changed(self, path: str) -> Coroutine[Any, Any, None] | None:
        """After a config change: the stored clearing of the providers whose keys `path`
        sets (`apiKeys.x`, `providers.x.apiKey`, or a parent), already forgotten here;
        None when `path` sets no key."""
        parts = path.split(".")
        if parts[0] not in ("apiKeys", "providers") or parts[2:3] not in ([], ["apiKey"]):
            return None
        names = {parts[1]} if len(parts) > 1 else {m.provider for m in self._marks.values()}
        self._marks = {k: m for k, m in self._marks.items() if m.provider not in names}

        async def clear_stored() -> None:
            for name in sorted(names):
                await self._store.clear(name)

        return clear_stored()

    def status(self) -> list[dict[str, Any]]:
        """The keys set aside now, for `gsv status` and `gsv doctor`."""
        now = self._now_ms()
        marks = sorted(self._marks.values(), key=lambda m: (m.provider, m.fingerprint))
        return [_shown(m) for m in marks if self._aside(m.provider, m.fingerprint, now)]


def _shown(mark: KeyMark) -> dict[str, Any]:
    return {"provider": mark.provider, "key": mark.fingerprint, "state": mark.state,
            "reason": mark.reason, "until": mark.until, "since": mark.at}  # fmt: skip
