"""The provider API keys set aside (gsv_core/providers/keys.py), so a rejected key or a
cooldown outlives a gateway restart. Rows name a key by its fingerprint, never the key."""

from __future__ import annotations

from dataclasses import dataclass

from gsv_core.storage.db import Database

REJECTED = "rejected"  # not tried until the owner sets or tests the key again
COOLING = "cooling"  # not tried before `until`


@dataclass(frozen=True)
class KeyMark:
    provider: str
    fingerprint: str
    state: str  # REJECTED | COOLING
    until: int | None  # epoch ms, for COOLING
    reason: str  # e.g. "rate limited", "out of quota", "key rejected"
    at: int  # when it was set aside, epoch ms


class ProviderKeyStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self) -> list[KeyMark]:
        query = "SELECT provider, fingerprint, state, until, reason, at FROM provider_keys"
        rows = await self._db.read(lambda c: c.execute(query).fetchall())
        return [KeyMark(*row) for row in rows]

    async def put(self, mark: KeyMark) -> None:
        sql = "INSERT OR REPLACE INTO provider_keys VALUES (?, ?, ?, ?, ?, ?)"
        values = (mark.provider, mark.fingerprint, mark.state, mark.until, mark.reason, mark.at)
        await self._db.write(lambda c: c.execute(sql, values))

    async def clear(self, provider: str, fingerprint: str | None = None) -> None:
        """Forget the provider's marks, or only the one of the key `fingerprint` names."""
        sql = "DELETE FROM provider_keys WHERE provider = ?"
        args: tuple[str, ...] = (provider,)
        if fingerprint is not None:
            sql, args = sql + " AND fingerprint = ?", (provider, fingerprint)
        await self._db.write(lambda c: c.execute(sql, args))
