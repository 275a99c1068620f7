"""What every platform adapter does the same way with its accounts: the table of running
accounts and their statuses, status changes told to the sink, jittered backoff, the clock,
the login answer (what a connected account is, else numbered setup steps) and the config
keys an account's settings live under.

An adapter subclasses `AccountAdapter[ItsAccount]`; its account type carries at least the
`status` and the `sink` (`AccountState`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any
from typing import Generic
from typing import Protocol
from typing import TypeVar

from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.base import LoginResult
from gsv_core.errors import Unavailable

log = logging.getLogger(__name__)


class AccountState(Protocol):
    """The part of an adapter's per-account state this module uses."""

    status: AccountStatus
    sink: ChannelSink
    task: asyncio.Task[None] | None  # the account's background work, if any


A = TypeVar("A", bound=AccountState)
T = TypeVar("T")


class AccountAdapter(Generic[A]):
    """Running accounts of one platform (one per account id) and their statuses."""

    name: str  # the platform, set by each adapter class

    def __init__(
        self,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        min_backoff: float = 1.0,
        max_backoff: float = 30.0,
    ) -> None:
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._accounts: dict[str, A] = {}
        # statuses outlive their accounts: a stopped account still shows why it stopped
        self._statuses: dict[str, AccountStatus] = {}

    def _new_status(self, account_id: str, mode: str, **extra: object) -> AccountStatus:
        """A fresh status for an account being started (kept after it stops)."""
        status = AccountStatus(account_id, mode=mode, extra=dict(extra))
        self._statuses[account_id] = status
        return status

    def _spawn(self, account: A, work: Coroutine[Any, Any, None]) -> None:
        """Run the account's background work as its task (cancelled by `stop`)."""
        name = f"{self.name}:{account.status.account_id}"
        account.task = asyncio.create_task(work, name=name)

    async def _admit(
        self, account: A, first_check: Awaitable[T], release: Callable[[], Awaitable[Any]]
    ) -> T:
        """What the account's first check returned; the account then joins the running
        ones. A check that raises (or is cancelled) first `release`s the account's clients."""
        try:
            result = await first_check
        except BaseException:
            await release()
            raise
        self._accounts[account.status.account_id] = account
        return result

    def status(self, account_id: str | None = None) -> list[AccountStatus]:
        """Copies of the statuses (all accounts, or the one asked for)."""
        return [
            replace(s, extra=dict(s.extra))
            for key, s in self._statuses.items()
            if account_id in (None, key)
        ]

    async def stop(self, account_id: str) -> None:
        """End the account's task, release what it holds open, mark it disconnected."""
        account = self._accounts.pop(account_id, None)
        if account is None:
            return
        if account.task is not None:
            account.task.cancel()
            await asyncio.wait([account.task])  # our own cancellation still propagates
        await self._close(account)
        self._update(account, connected=False)
        log.info("%s account %s stopped", self.name, account_id)

    async def _close(self, account: A) -> None:
        """Release the account's clients (its task has ended); nothing by default."""

    async def logout(self, account_id: str) -> None:
        """Stop the account. Its credentials are settings: logging out deletes none."""
        await self.stop(account_id)
        where = config_prefix(self.name, account_id)
        log.info("%s account %s logged out; its credentials stay in config (%s)",
                 self.name, account_id, where)  # fmt: skip

    async def login(self, account_id: str, force: bool) -> LoginResult:
        """What the account is signed in as; when it is not connected (or `force`), how
        this platform signs in and the numbered steps that set the account up."""
        account = self._accounts.get(account_id)
        if account is not None and account.status.connected and not force:
            return LoginResult(self._connected_as(account))
        intro, steps = self._setup(account_id)
        numbered = [f"{number}. {step}" for number, step in enumerate(steps, 1)]
        return LoginResult("\n".join([intro, *numbered]))

    def _connected_as(self, account: A) -> str:
        """One line naming what a connected account is signed in as."""
        raise NotImplementedError

    def _setup(self, account_id: str) -> tuple[str, list[str]]:
        """How the platform signs in (one line), and the steps that set an account up,
        the one with `start_command()` among them."""
        raise NotImplementedError

    def _running(self, account_id: str) -> A:
        account = self._accounts.get(account_id)
        if account is None:
            raise Unavailable(f"{self.name} account '{account_id}' is not running")
        return account

    def _update(self, account: A, **changes: Any) -> None:
        """Change the account's status; tell the sink when something changed."""
        status = account.status
        if all(getattr(status, key) == value for key, value in changes.items()):
            return
        for key, value in changes.items():
            setattr(status, key, value)
        try:
            account.sink.status_changed(self.name, replace(status, extra=dict(status.extra)))
        except Exception:
            log.exception("%s status callback failed", self.name)

    def _backoff(self, failures: int) -> float:
        """Jittered exponential backoff: half fixed, half random, capped."""
        ceiling = min(self._max_backoff, self._min_backoff * 2.0 ** min(failures - 1, 16))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def is_default(account_id: str) -> bool:
    """Whether the account is the platform's default one (settings at the top level)."""
    return account_id in ("", "default")


def config_prefix(channel: str, account_id: str) -> str:
    """Where an account's settings live: `channels.<name>` or `channels.<name>.accounts.<id>`."""
    if is_default(account_id):
        return f"channels.{channel}"
    return f"channels.{channel}.accounts.{account_id}"


def config_key(channel: str, account_id: str, name: str) -> str:
    """The config key of one setting of an account."""
    return f"{config_prefix(channel, account_id)}.{name}"


def start_command(channel: str, account_id: str) -> str:
    """The command that starts the account (the login instructions end with it)."""
    suffix = "" if is_default(account_id) else f" {account_id}"
    return f"gsv channels start {channel}{suffix}"
