"""Credentials of nodes and channel adapters, and the one-time join codes that mint them.

Only a SHA-256 of each secret is stored: the secrets are 256-bit random strings (join
codes 50-bit, single use, short-lived and rate limited), so a slow hash would add nothing.
A credential reads `{id}.{secret}`: the id finds the row, the secret is compared in
constant time. Redeeming a code and minting its credential is one transaction, so a code
can never be used twice, even by two connects racing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from dataclasses import dataclass
from typing import Any

from gsv_core.storage.db import Database

# Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or off a phone is
# typed right; 10 characters = 50 bits.
_CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CODE_LENGTH = 10


@dataclass(frozen=True)
class Credential:
    id: str
    role: str  # node | channel
    subject: str  # the node id, or the channel name
    created_at: int
    last_used_at: int | None
    revoked_at: int | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class Redeemed:
    """A join code exchanged for a new credential (`token` is shown once, never stored)."""

    credential: Credential
    token: str
    replaced: list[str]  # ids of the subject's earlier credentials, now revoked


_COLUMNS = "id, role, subject, created_at, last_used_at, revoked_at"


def _credential(row: tuple[Any, ...]) -> Credential:
    return Credential(*row)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_join_code() -> str:
    raw = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(_CODE_LENGTH))
    return f"{raw[:5]}-{raw[5:]}"


def normalize_join_code(code: str) -> str:
    """What the user typed, as stored: case, spaces and dashes do not matter; the letters
    Crockford reads as digits (O, I, L) are mapped back."""
    cleaned = "".join(code.split()).replace("-", "").upper()
    return cleaned.translate(str.maketrans("OIL", "011"))


def split_token(token: str) -> tuple[str, str] | None:
    """(credential id, secret) of a `{id}.{secret}` credential, None for anything else."""
    ident, dot, secret = token.partition(".")
    if not dot or not ident or not secret or len(token) > 256:
        return None
    return ident, secret


class CredentialStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_join_code(self, role: str, subject: str | None, now: int, expires_at: int) -> str:
        code = new_join_code()

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM join_codes WHERE expires_at < ?", (now,))
            conn.execute(
                "INSERT INTO join_codes (code_hash, role, subject, created_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (digest(normalize_join_code(code)), role, subject, now, expires_at),
            )

        await self._db.write(write)
        return code

    async def redeem(self, code: str, role: str, subject: str, now: int) -> Redeemed | None:
        """Use `code` once to mint a credential for (`role`, `subject`); None when the code
        is unknown, used, expired, or issued for another role or subject."""
        code_hash = digest(normalize_join_code(code))
        ident = role[0] + secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)

        def write(conn: sqlite3.Connection) -> Redeemed | None:
            row = conn.execute(
                "SELECT role, subject FROM join_codes "
                "WHERE code_hash = ? AND used_at IS NULL AND expires_at >= ?",
                (code_hash, now),
            ).fetchone()
            if row is None or row[0] != role or row[1] not in (None, subject):
                return None
            conn.execute("UPDATE join_codes SET used_at = ? WHERE code_hash = ?", (now, code_hash))
            replaced = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM credentials "
                    "WHERE role = ? AND subject = ? AND revoked_at IS NULL",
                    (role, subject),
                )
            ]
            conn.execute(
                "UPDATE credentials SET revoked_at = ? "
                "WHERE role = ? AND subject = ? AND revoked_at IS NULL",
                (now, role, subject),
            )
            conn.execute(
                "INSERT INTO credentials (id, role, subject, secret_hash, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (ident, role, subject, digest(secret), now),
            )
            credential = Credential(ident, role, subject, now, None, None)
            return Redeemed(credential, f"{ident}.{secret}", replaced)

        result: Redeemed | None = await self._db.write(write)
        return result

    async def verify(self, token: str, now: int) -> Credential | None:
        """The active credential `token` proves, else None (unknown, revoked, wrong secret);
        records when it was last used (one transaction: the check and the record)."""
        parts = split_token(token)
        if parts is None:
            return None
        ident, secret = parts

        def check(conn: sqlite3.Connection) -> Credential | None:
            row = conn.execute(
                f"SELECT {_COLUMNS}, secret_hash FROM credentials WHERE id = ?", (ident,)
            ).fetchone()
            if row is None or not hmac.compare_digest(digest(secret), row[-1]):
                return None
            credential = _credential(row[:-1])
            if not credential.active:
                return None
            conn.execute("UPDATE credentials SET last_used_at = ? WHERE id = ?", (now, ident))
            return credential

        verified: Credential | None = await self._db.write(check)
        return verified

    async def list_all(self, include_revoked: bool = False) -> list[Credential]:
        where = "" if include_revoked else "WHERE revoked_at IS NULL"

        return await self._db.select(
            _credential,
            f"SELECT {_COLUMNS} FROM credentials {where} ORDER BY role, subject, created_at",
        )

    async def revoke(self, ident: str, now: int) -> list[Credential]:
        """Revoke the active credential with id `ident`, or every active credential of the
        node or channel named `ident`; returns what was revoked."""

        def write(conn: sqlite3.Connection) -> list[Credential]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM credentials "
                "WHERE (id = ? OR subject = ?) AND revoked_at IS NULL",
                (ident, ident),
            ).fetchall()
            conn.executemany(
                "UPDATE credentials SET revoked_at = ? WHERE id = ?", [(now, r[0]) for r in rows]
            )
            return [_credential((*r[:5], now)) for r in rows]

        revoked: list[Credential] = await self._db.write(write)
        return revoked
