"""The live gateway config: overrides loaded from the store, validated writes, masked reads.

Writes are serialised (one at a time) so two concurrent `config.set` calls cannot lose
each other's change; the new overrides are on disk before the caller is answered.

Secrets never reach the database (gsv_core.config.secrets): a write puts each secret in
the secret store first, then the row with its marker; a removed secret key is deleted
from the store after the row. The store can block, so it is read once at load (values
kept in memory) and written from a thread. A database left by an older gsv with
plain-text secrets is migrated at load and scrubbed (gsv_core.storage.db.Database.scrub).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from gsv_core import config as cfg
from gsv_core.config import secrets as secrets
from gsv_core.config.mask import mask_secrets
from gsv_core.config.tree import get_path
from gsv_core.config.tree import split_path
from gsv_core.errors import Conflict
from gsv_core.storage.config_store import ConfigStore
from gsv_core.storage.secret_store import LocalSecretStore
from gsv_core.storage.secret_store import SecretStore

log = logging.getLogger(__name__)


class ConfigService:
    def __init__(
        self,
        store: ConfigStore,
        overrides: dict[str, Any],
        vault: SecretStore | None = None,
    ) -> None:
        self._store = store
        self._vault = vault or LocalSecretStore()
        self._lock = asyncio.Lock()
        # set by the server: a running gateway always needs its owner token
        self.token_required = False
        # called after every stored change (config.set and gsv__ConfigSet alike): parts that
        # cache a schedule from the config (the heartbeat timer) look again at once
        self.listeners: list[Callable[[str], None]] = []
        self._apply(overrides)

    @classmethod
    async def load(cls, store: ConfigStore, vault: SecretStore | None = None) -> ConfigService:
        vault = vault or LocalSecretStore()
        stored = await store.load()
        split = secrets.split_secrets(stored)  # plain text an older gsv left in the rows
        wanted = [n for n in secrets.referenced_names(split.stored) if n not in split.secrets]
        found = await asyncio.to_thread(vault.load, wanted)
        moved = not split.secrets or await _move_plaintext(store, vault, stored, split)
        overrides, missing = secrets.join_secrets(split.stored, {**found, **split.secrets})
        for path in missing:
            log.warning("config key %s: its secret is missing from the secret store; "
                        "it reads as unset until set again", path)  # fmt: skip
        if split.invalid:
            log.warning("config keys %s look like secrets but are no strings: left in the "
                        "database", ", ".join(split.invalid))  # fmt: skip
        # a stored override that no longer validates must not stop the gateway: it is
        # reported by validation on the next write; reads still see it.
        service = cls(store, overrides, vault)
        if not moved:  # not in the store: the next write stores them before any marker
            for name in split.secrets:
                service._secrets.pop(name, None)
        return service

    def _apply(self, overrides: dict[str, Any]) -> None:
        self.overrides = overrides
        # the secrets these overrides hold, by store name: what the store has for them
        self._secrets = secrets.split_secrets(overrides).secrets
        self.effective = cfg.effective_config(overrides)
        self._masked: dict[str, Any] = mask_secrets(self.effective)
        # setting() answers from here until the next change (read on every tool call)
        self._looked_up: dict[str, tuple[bool, Any]] = {}

    @property
    def masked(self) -> dict[str, Any]:
        return self._masked

    def setting(self, path: str) -> Any:
        """The effective value at a dotted path (raw, secrets included: for gateway code)."""
        looked_up = self._looked_up.get(path)
        if looked_up is None:
            looked_up = self._looked_up[path] = get_path(self.effective, path)
        found, value = looked_up
        if not found:
            raise KeyError(path)
        return value

    def get_masked(self, path: str) -> tuple[bool, Any]:
        return get_path(self._masked, path)

    async def stored_rows(self) -> dict[str, Any]:
        """The overrides as the database holds them (markers, not secrets): for the audit."""
        return await self._store.load()

    @property
    def auth_token(self) -> str | None:
        return _token_of(self.effective)

    def preview(self, writes: dict[str, Any]) -> dict[str, Any]:
        """The effective config as it would be with `writes` (path -> value) made,
        validated as `set` validates them, nothing saved: what setup tries before it keeps
        anything (`models.list`/`models.test` with `settings`)."""
        overrides = self.overrides
        for path, value in writes.items():
            secrets.refuse_markers(value, path)
            overrides = cfg.set_override(overrides, path, value)
        effective = cfg.effective_config(overrides)
        cfg.validate_config(effective)
        return effective

    async def set(self, path: str, value: Any) -> None:
        """Validate and persist one change; raises InvalidParams naming a bad field."""
        await self.update(path, lambda _current: value)

    async def update(self, path: str, change: Callable[[Any], Any]) -> None:
        """`set` with the new value computed from the current one under the write lock
        (appending an approval rule must not lose a concurrent append)."""
        async with self._lock:
            value = change(get_path(self.effective, path)[1])
            secrets.refuse_markers(value, path)
            overrides = cfg.set_override(self.overrides, path, value)
            effective = cfg.effective_config(overrides)
            cfg.validate_config(effective)
            split = secrets.split_secrets(overrides)
            split.invalid = [p for p in split.invalid if p == path or p.startswith(path + ".")]
            secrets.check_secrets(split)  # only the part being set: old rows stay readable
            if self.token_required and not _token_of(effective):
                raise Conflict(
                    "auth.token cannot be removed: the gateway always needs an owner "
                    "token. Set a new one instead (`gsv security audit --fix` makes one)"
                )
            await self._save(split, split_path(path)[0])
            self._apply(secrets.join_secrets(split.stored, split.secrets)[0])
        for listener in self.listeners:
            listener(path)

    async def _save(self, split: secrets.Split, top: str) -> None:
        """Secrets into the store, then the row; on failure the store is put back."""
        written = {n: v for n, v in split.secrets.items() if self._secrets.get(n) != v}
        dropped = [name for name in self._secrets if name not in split.secrets]
        try:
            if written:
                await asyncio.to_thread(self._vault.save, written)
            await self._store.save(split.stored, top)
        except BaseException:
            await asyncio.to_thread(self._undo, written)
            raise
        if dropped:
            try:
                await asyncio.to_thread(self._vault.delete, dropped)
            except Exception:  # the change is stored; the entry is only left over
                log.exception("could not delete %s from the secret store", ", ".join(dropped))

    def _undo(self, written: dict[str, str]) -> None:
        try:
            self._vault.save({n: self._secrets[n] for n in written if n in self._secrets})
            self._vault.delete([n for n in written if n not in self._secrets])
        except Exception:  # the caller's error is the one to report
            log.exception("could not restore the secret store after a failed config write")


async def _move_plaintext(
    store: ConfigStore, vault: SecretStore, stored: dict[str, Any], split: secrets.Split
) -> bool:
    """Move the plain-text secrets of an older gsv to the store; leave no trace in the
    database file or its WAL. False when the store failed: the values still work from
    memory, the rows stay as they were and the next start tries again."""
    try:
        await asyncio.to_thread(vault.save, split.secrets)
        for top, value in split.stored.items():
            if value != stored[top]:
                await store.save(split.stored, top)
    except Exception:
        log.exception("could not move plain-text secrets to the secret store")
        return False
    cleared = await store.scrub()
    log.info("moved %d plain-text secret(s) from the database to the secret store",
             len(split.secrets))  # fmt: skip
    if not cleared:
        log.warning("the database's write-ahead log was in use: the old values leave it "
                    "at its next checkpoint")  # fmt: skip
    return True


def _token_of(effective: dict[str, Any]) -> str | None:
    token = effective.get("auth", {}).get("token")
    return token if isinstance(token, str) and token else None
