"""The `test` channel: an in-process adapter for tests and demos. It records what the
agent sends and lets a test (or `gsv channels`, for a demo) inject inbound messages."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import Capabilities
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import LoginResult
from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unavailable


@dataclass
class _Account:
    sink: ChannelSink
    config: dict[str, Any]
    status: AccountStatus


@dataclass
class TestChannel:
    """Records `sent` messages and `typing` calls per account; `inject` receives one."""

    __test__ = False  # not a pytest test class
    name: str = "test"
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            chat_types=("dm", "group", "channel", "thread"),
            media=True,
            threads=True,
            typing=True,
            max_text=4000,
        )
    )
    sent: list[tuple[str, OutboundMessage]] = field(default_factory=list)
    typing: list[tuple[str, str, bool]] = field(default_factory=list)
    fail_sends: bool = False
    _accounts: dict[str, _Account] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        if config.get("failStart"):
            raise InvalidParams(f"test channel refused to start: {config['failStart']}")
        status = AccountStatus(account_id, connected=True, authenticated=True, mode="test")
        self._accounts[account_id] = _Account(sink, config, status)
        sink.status_changed(self.name, status)

    async def stop(self, account_id: str) -> None:
        self._accounts.pop(account_id, None)

    def status(self, account_id: str | None = None) -> list[AccountStatus]:
        return [a.status for key, a in self._accounts.items() if account_id in (None, key)]

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        if account_id not in self._accounts:
            raise Unavailable(f"test account {account_id} is not running")
        if self.fail_sends:
            raise Unavailable("test channel: sending failed")
        self.sent.append((account_id, message))
        return f"out-{next(self._ids)}"

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        self.typing.append((account_id, peer.id, typing))

    async def login(self, account_id: str, force: bool) -> LoginResult:
        return LoginResult("The test channel needs no login.")

    async def logout(self, account_id: str) -> None:
        await self.stop(account_id)

    async def inject(self, message: InboundMessage) -> None:
        """Receive a message as if a person had sent it."""
        account = self._accounts.get(message.account_id)
        if account is None:
            raise Unavailable(f"test account {message.account_id} is not running")
        await account.sink.inbound(message)

    def texts(self, peer_id: str | None = None) -> list[str]:
        return [m.text for _, m in self.sent if peer_id in (None, m.peer.id)]
