"""The live gateway config: overrides loaded from the store, validated writes, masked reads.

Writes are serialised (one at a time) so two concurrent `config.set` calls cannot lose
each other's change; the new overrides are on disk before the caller is answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gsv_core import config as cfg
from gsv_core.errors import Conflict
from gsv_core.storage.config_store import ConfigStore


class ConfigService:
    def __init__(self, store: ConfigStore, overrides: dict[str, Any]) -> None:
        self._store = store
        self._lock = asyncio.Lock()
        self.token_required = False  # set by the server when bound beyond loopback
        # called after every stored change (config.set and gsv__ConfigSet alike): parts that
        # cache a schedule from the config (the heartbeat timer) look again at once
        self.listeners: list[Callable[[str], None]] = []
        self._apply(overrides)

    @classmethod
    async def load(cls, store: ConfigStore) -> ConfigService:
        overrides = await store.load()
        # a stored override that no longer validates must not stop the gateway: it is
        # reported by validation on the next write; reads still see it.
        return cls(store, overrides)

    def _apply(self, overrides: dict[str, Any]) -> None:
        self.overrides = overrides
        self.effective = cfg.effective_config(overrides)
        self._masked: dict[str, Any] = cfg.mask_secrets(self.effective)
        # setting() answers from here until the next change (read on every tool call)
        self._looked_up: dict[str, tuple[bool, Any]] = {}

    @property
    def masked(self) -> dict[str, Any]:
        return self._masked

    def setting(self, path: str) -> Any:
        """The effective value at a dotted path (raw, secrets included: for gateway code)."""
        looked_up = self._looked_up.get(path)
        if looked_up is None:
            looked_up = self._looked_up[path] = cfg.get_path(self.effective, path)
        found, value = looked_up
        if not found:
            raise KeyError(path)
        return value

    def get_masked(self, path: str) -> tuple[bool, Any]:
        return cfg.get_path(self._masked, path)

    @property
    def auth_token(self) -> str | None:
        return _token_of(self.effective)

    async def set(self, path: str, value: Any) -> None:
        """Validate and persist one change; raises InvalidParams naming a bad field."""
        await self.update(path, lambda _current: value)

    async def update(self, path: str, change: Callable[[Any], Any]) -> None:
        """`set` with the new value computed from the current one under the write lock
        (appending an approval rule must not lose a concurrent append)."""
        async with self._lock:
            value = change(cfg.get_path(self.effective, path)[1])
            overrides = cfg.set_override(self.overrides, path, value)
            effective = cfg.effective_config(overrides)
            cfg.validate_config(effective)
            if self.token_required and not _token_of(effective):
                raise Conflict(
                    "auth.token cannot be removed while the gateway listens beyond "
                    "loopback; restart it with --insecure first"
                )
            top = cfg.split_path(path)[0]
            await self._store.save(overrides, top)
            self._apply(overrides)
        for listener in self.listeners:
            listener(path)


def _token_of(effective: dict[str, Any]) -> str | None:
    token = effective.get("auth", {}).get("token")
    return token if isinstance(token, str) and token else None
