"""Where the gateway keeps secrets: the local secret store the CLI uses.

`LocalSecretStore` is gsv_core.localconfig's store (the system keyring where one works,
else the 0600 secrets file). Every call may block (D-Bus, file I/O): callers run it in a
thread. A `SecretStore` Protocol so the config service and the channel store do not care
which store it is (tests pass an in-memory one that fails on demand).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Protocol

from gsv_core import localconfig
from gsv_core.errors import GsvError


class SecretStore(Protocol):
    def load(self, names: Iterable[str]) -> dict[str, str]:
        """The values the store has for `names` (missing names are left out)."""
        ...

    def save(self, secrets: Mapping[str, str]) -> None: ...

    def delete(self, names: Iterable[str]) -> None: ...


class LocalSecretStore:
    """localconfig's keyring-or-0600-file store (no environment overrides: the gateway
    reads back exactly what it stored)."""

    def load(self, names: Iterable[str]) -> dict[str, str]:
        found = {name: localconfig.stored_secret(name) for name in names}
        return {name: value for name, value in found.items() if value is not None}

    def save(self, secrets: Mapping[str, str]) -> None:
        for name, value in secrets.items():
            try:
                localconfig.set_secret(name, value)
            except OSError as exc:  # the secrets file could not be written
                raise GsvError(f"could not store {name} in the secret store: {exc}") from None

    def delete(self, names: Iterable[str]) -> None:
        for name in names:
            localconfig.delete_secret(name)
