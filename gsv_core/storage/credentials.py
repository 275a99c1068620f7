"""Credentials of nodes, channel adapters and browsers, and the one-time join codes that
mint them.

Only a SHA-256 of each secret is stored: the secrets are 256-bit random strings (join
codes 50-bit, single use, short-lived and rate limited), so a slow hash would add nothing.
A credential reads `{id}.{secret}`: the id finds the row, the secret is compared in
constant time.

A node id or a channel belongs to its credential: a code made without a subject cannot
take one that has a credential, active or revoked, unless the owner made it with
`may_replace`. A code is checked (`check_join`, which changes nothing) when a peer
connects with it, and spent (`redeem`) only once the connection is accepted: checking it
again, spending it, revoking the subject's earlier credentials and minting the new one is
one transaction, so a code can never be used twice, even by two connects racing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gsv_core.protocol.methods import CHANNEL
from gsv_core.protocol.methods import NODE
from gsv_core.storage.db import Database

# Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or off a phone is
# typed right; 10 characters = 50 bits.
_CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CODE_LENGTH = 10
# roles whose subject names one peer (a node id, a channel): it belongs to its credential.
# A browser's subject is only a label (`Firefox on Linux (3fa2)`): it takes nothing.
IDENTITIES = (NODE, CHANNEL)


@dataclass(frozen=True)
class Credential:
    id: str
    role: str  # node | channel | web
    subject: str  # the node id, the channel name, or a browser's label
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
    replaced: list[Credential]  # the subject's earlier credentials, revoked by this one


class JoinCheck(StrEnum):
    """What a join code may do for a (role, subject)."""

    OK = "ok"
    INVALID = "invalid"  # unknown, used, expired, or made for another role or subject
    TAKEN = "taken"  # made without a subject, for one that already has a credential
    KNOWN = "known"  # made without a subject, for a node the gateway has seen (no credential)


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

    async def forget_expired_codes(self, now: int) -> int:
        """Delete the join codes past their expiry, used or not; how many."""
        sql = "DELETE FROM join_codes WHERE expires_at < ?"
        return await self._db.write(lambda conn: conn.execute(sql, (now,)).rowcount)

    async def add_join_code(
        self, role: str, subject: str | None, now: int, expires_at: int, may_replace: bool = False
    ) -> str:
        """A new code for `role`: for `subject` only, or (None) for whichever the peer
        names; `may_replace`: even one that already has a credential."""
        code = new_join_code()

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM join_codes WHERE expires_at < ?", (now,))
            conn.execute(
                "INSERT INTO join_codes (code_hash, role, subject, created_at, expires_at, "
                "may_replace) VALUES (?, ?, ?, ?, ?, ?)",
                (digest(normalize_join_code(code)), role, subject, now, expires_at, may_replace),
            )

        await self._db.write(write)
        return code

    async def check_join(self, code: str, role: str, subject: str, now: int) -> JoinCheck:
        """Whether `code` may mint a credential for (`role`, `subject`) now; changes nothing."""
        code_hash = digest(normalize_join_code(code))
        return await self._db.read(lambda conn: _check_join(conn, code_hash, role, subject, now))

    async def redeem(self, code: str, role: str, subject: str, now: int) -> Redeemed | None:
        """Spend `code` to mint a credential for (`role`, `subject`), revoking the subject's
        earlier ones (a node's or a channel's; a browser's label replaces nothing); None,
        and nothing changed, when `check_join` would not say OK."""
        code_hash = digest(normalize_join_code(code))
        ident = role[0] + secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)

        def write(conn: sqlite3.Connection) -> Redeemed | None:
            if _check_join(conn, code_hash, role, subject, now) is not JoinCheck.OK:
                return None
            conn.execute("UPDATE join_codes SET used_at = ? WHERE code_hash = ?", (now, code_hash))
            replaced = _revoke_subject(conn, role, subject, now) if role in IDENTITIES else []
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

    async def revoke(self, ident: str, now: int, role: str | None = None) -> list[Credential]:
        """Revoke the active credential with id `ident`, or every active credential of the
        node or channel named `ident` (of `role` only, when given); returns what was revoked."""
        where = "(id = ? OR subject = ?) AND revoked_at IS NULL"
        args: tuple[str, ...] = (ident, ident)
        if role is not None:
            where, args = where + " AND role = ?", (*args, role)
        return await self._revoke_where(where, args, now)

    async def revoke_role(self, role: str, now: int) -> list[Credential]:
        """Revoke every active credential of `role` (all browsers: `gsv web revoke --all`)."""
        return await self._revoke_where("role = ? AND revoked_at IS NULL", (role,), now)

    async def _revoke_where(self, where: str, args: tuple[str, ...], now: int) -> list[Credential]:
        def write(conn: sqlite3.Connection) -> list[Credential]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM credentials WHERE {where}", args
            ).fetchall()
            conn.executemany(
                "UPDATE credentials SET revoked_at = ? WHERE id = ?", [(now, r[0]) for r in rows]
            )
            return [_credential((*r[:5], now)) for r in rows]

        revoked: list[Credential] = await self._db.write(write)
        return revoked


def _check_join(
    conn: sqlite3.Connection, code_hash: str, role: str, subject: str, now: int
) -> JoinCheck:
    row = conn.execute(
        "SELECT role, subject, may_replace FROM join_codes "
        "WHERE code_hash = ? AND used_at IS NULL AND expires_at >= ?",
        (code_hash, now),
    ).fetchone()
    if row is None or row[0] != role or row[1] not in (None, subject):
        return JoinCheck.INVALID
    if row[1] is not None or row[2] or role not in IDENTITIES:
        return JoinCheck.OK  # made for this subject, or to replace, or a browser's label
    held = conn.execute(
        "SELECT 1 FROM credentials WHERE role = ? AND subject = ? LIMIT 1", (role, subject)
    ).fetchone()
    if held:
        return JoinCheck.TAKEN
    # a node seen before credentials existed (or whose rows were lost) keeps its id too:
    # its approval rules and skills are keyed by it, and a stranger's code must not inherit them
    seen = (
        role == NODE
        and conn.execute("SELECT 1 FROM nodes WHERE node_id = ?", (subject,)).fetchone()
    )
    return JoinCheck.KNOWN if seen else JoinCheck.OK


def _revoke_subject(
    conn: sqlite3.Connection, role: str, subject: str, now: int
) -> list[Credential]:
    """Revoke the subject's active credentials; returns them."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM credentials WHERE role = ? AND subject = ? AND revoked_at IS NULL",
        (role, subject),
    ).fetchall()
    conn.executemany(
        "UPDATE credentials SET revoked_at = ? WHERE id = ?", [(now, r[0]) for r in rows]
    )
    return [_credential((*r[:5], now)) for r in rows]
