"""The channel manager: the in-process adapters and their accounts (start, stop, status,
login, restart after a gateway restart), the sink adapters report to, and pairing
approvals, and button presses (an approval answered from a messenger). Receiving lives in
`inbox`, sending in `outbox`."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from gsv_core.authority import GUEST
from gsv_core.authority import KEY
from gsv_core.authority import OWNER
from gsv_core.channels.base import AccountStatus
from gsv_core.channels.base import ActionEvent
from gsv_core.channels.base import Channel
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import LoginResult
from gsv_core.channels.base import Peer
from gsv_core.channels.inbox import Inbox
from gsv_core.channels.outbox import DEFAULT_ACCOUNT
from gsv_core.channels.outbox import Outbox
from gsv_core.channels.outbox import parse_approval_action
from gsv_core.channels.parts import ChannelParts
from gsv_core.errors import GsvError
from gsv_core.errors import NotFound
from gsv_core.errors import Unavailable
from gsv_core.extras import missing_extra
from gsv_core.pairing import WELCOME
from gsv_core.pairing import is_owner
from gsv_core.pairing import pairing_ttl_ms
from gsv_core.storage.channels import AccountRecord
from gsv_core.storage.outbox import QueueSummary

log = logging.getLogger(__name__)


@dataclass(eq=False)
class ChannelManager(ChannelParts):
    """Built from its parts; hands them on to the inbox and the outbox it makes."""

    def __post_init__(self) -> None:
        self.outbox = Outbox(self)
        self.inbox = Inbox(self, self.outbox)

    # -- settings -----------------------------------------------------------------------
    def account_config(
        self, channel: str, account_id: str, extra: dict[str, Any] | None
    ) -> dict[str, Any]:
        """`channels.<ch>` merged with `channels.<ch>.accounts.<id>` and call-time config."""
        settings = self.settings(channel)
        base = {k: v for k, v in settings.items() if k != "accounts"}
        accounts = settings.get("accounts")
        per_account = accounts.get(account_id) if isinstance(accounts, dict) else None
        return {**base, **(per_account or {}), **(extra or {})}

    def _adapter(self, channel: str) -> Channel:
        adapter = self.adapters.get(channel)
        if adapter is None:
            raise NotFound(f"Unknown channel: {channel}")
        return adapter

    # -- accounts -----------------------------------------------------------------------
    async def start(
        self, channel: str, account_id: str, extra: dict[str, Any] | None = None
    ) -> None:
        """Start an in-process account; remembered so it starts again after a restart."""
        adapter = self._adapter(channel)
        config = self.account_config(channel, account_id, extra)
        try:
            await adapter.start(account_id, config, self)
        except GsvError:
            raise
        except ModuleNotFoundError as exc:  # the platform SDK is an optional extra
            raise Unavailable(missing_extra(channel, exc)) from exc
        except Exception as exc:
            log.exception("%s account %s failed to start", channel, account_id)
            raise GsvError(f"{channel} failed to start: {exc}") from exc
        record = await self._account(channel, account_id)
        record.running, record.config = True, dict(extra or {})
        record.connected_at = self.host.now_ms()
        await self.store.save_account(record)

    async def stop(self, channel: str, account_id: str) -> None:
        await self._adapter(channel).stop(account_id)
        record = await self._account(channel, account_id)
        record.running = False
        await self.store.save_account(record)

    async def restore(self) -> None:
        """Start again the accounts that were running when the gateway stopped, then take
        up the journal (messages received but not answered before the stop)."""
        try:
            await self.store.move_plaintext_secrets()  # left by an older gsv
        except Exception:  # the rows still work as they are; the next start retries
            log.exception("could not move plain-text channel secrets to the secret store")
        for record in await self.store.accounts():
            if not record.running or record.channel not in self.adapters:
                continue
            config = self.account_config(record.channel, record.account_id, record.config)
            try:
                await self.adapters[record.channel].start(record.account_id, config, self)
            except Exception:  # one broken account must not keep the others down
                log.exception("restarting %s account %s failed", record.channel, record.account_id)
        await self.inbox.replay()
        self.outbox.start_retries()

    async def close(self) -> None:
        self.outbox.close()
        await self.inbox.close()
        for adapter in self.adapters.values():
            for status in adapter.status():
                with contextlib.suppress(Exception):
                    await adapter.stop(status.account_id)

    async def _account(self, channel: str, account_id: str) -> AccountRecord:
        for record in await self.store.accounts():
            if (record.channel, record.account_id) == (channel, account_id):
                return record
        return AccountRecord(channel, account_id, False, {}, None, None)

    def status(self, channel: str, account_id: str | None = None) -> list[AccountStatus]:
        if channel in self.adapters:
            return self.adapters[channel].status(account_id)
        account = account_id or DEFAULT_ACCOUNT
        if self.host.external_peer(channel, account) is not None:
            return [AccountStatus(account, connected=True, authenticated=True, mode="websocket")]
        raise NotFound(f"Unknown channel: {channel}")

    async def login(self, channel: str, account_id: str, force: bool) -> LoginResult:
        return await self._adapter(channel).login(account_id, force)

    async def logout(self, channel: str, account_id: str) -> None:
        await self._adapter(channel).logout(account_id)
        await self.store.delete_account(channel, account_id)

    async def accounts(self) -> list[AccountRecord]:
        return await self.store.accounts()

    # -- ChannelSink --------------------------------------------------------------------
    async def inbound(self, message: InboundMessage) -> None:
        """An adapter received a message: it is in the journal when this returns."""
        await self.inbox.receive(message)

    async def action(self, event: ActionEvent) -> str | None:
        """A button press. Approval buttons answer their approval by the rules of a
        "yes"/"no" reply (only an owner); any other press means nothing and is ignored."""
        parsed = parse_approval_action(event.action_id)
        if parsed is None:
            log.info(
                "%s: ignored a press of unknown button %r", event.channel, event.action_id[:80]
            )
            return None
        owner = is_owner(event.channel, event.sender.id, self.settings(event.channel))
        context = {
            "channel": event.channel, "accountId": event.account_id,
            "peer": event.peer.to_wire(), "senderId": event.sender.id,
            KEY: OWNER if owner else GUEST,
        }  # fmt: skip
        return self.host.answer_approval(parsed[0], parsed[1], context)

    def status_changed(self, channel: str, status: AccountStatus) -> None:
        log.info(
            "%s account %s: connected=%s error=%s",
            channel, status.account_id, status.connected, status.error,
        )  # fmt: skip
        if status.connected:
            self.outbox.spawn(self.connected(channel, status.account_id))

    async def connected(self, channel: str, account_id: str) -> None:
        """An account (in-process, or an external adapter's connection) is there again:
        the replies that waited for it go now."""
        await self.outbox.replies.account_back(channel, account_id)

    async def queued_replies(self) -> dict[tuple[str, str], QueueSummary]:
        """Replies waiting to be delivered, per (channel, account)."""
        return {(q.channel, q.account_id): q for q in await self.queued.summary()}

    # -- pairing ------------------------------------------------------------------------
    def pairing_ttl_ms(self) -> int:
        return pairing_ttl_ms(self.host.config())

    async def approve(self, channel: str, sender_id: str, owner: bool = False) -> dict[str, Any]:
        """Approve a pending sender: allow them in config (as one of the channel's owners
        with `owner`, else as a guest) and welcome them through whichever adapter serves
        the channel (in-process or external)."""
        request = await self.pairing.take(
            channel, sender_id, self.host.now_ms(), self.pairing_ttl_ms()
        )
        await self.host.allow_sender(channel, request.sender_id, owner=owner)
        try:
            await self.outbox.send_text(
                channel, request.account_id, Peer.from_wire(request.peer), WELCOME
            )
        except GsvError as exc:
            log.warning("approved %s on %s; the welcome failed: %s", request.sender_id, channel,
                        exc.message)  # fmt: skip
        result: dict[str, Any] = {"approved": True, "senderId": request.sender_id}
        if request.sender_name:
            result["senderName"] = request.sender_name
        return result

    async def reject(self, channel: str, sender_id: str) -> dict[str, Any]:
        request = await self.pairing.take(
            channel, sender_id, self.host.now_ms(), self.pairing_ttl_ms()
        )
        return {"rejected": True, "senderId": request.sender_id}
