"""Slack's side of an account's connection: auth.test, Socket Mode sockets, and handing
each envelope over (events to `sink.inbound()`, button presses to `sink.action()`).

Socket Mode is a WebSocket whose single-use URL comes from `apps.connections.open` (app
token, `xapp-`); the socket itself is plain `websockets`, which keeps reconnecting ours
to shape: a dropped socket is reopened at once, repeated failures back off (jittered,
exponential), a rejected token stops the account with a clear status. Every envelope is
acknowledged after `sink.inbound()` returned (the message is in the journal), so Slack
redelivers what a crash lost and the journal drops duplicates.

A press arrives as an `interactive` envelope (`block_actions`); it is acknowledged at once
(Slack wants that within three seconds; a lost press is retried by pressing again), handed
to `sink.action()`, and the answer is shown to the presser alone (chat.postEphemeral).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import ActionEvent
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Sender
from gsv_core.channels.media import sort_downloads
from gsv_core.channels.slack.account import AUTH_ERRORS
from gsv_core.channels.slack.account import Account
from gsv_core.channels.slack.account import error_code
from gsv_core.channels.slack.account import masked_reason
from gsv_core.channels.slack.account import network_errors
from gsv_core.channels.slack.account import setting_key
from gsv_core.channels.slack.conversion import download
from gsv_core.channels.slack.conversion import guess_type
from gsv_core.channels.slack.conversion import parse_frame
from gsv_core.channels.slack.conversion import peer_of
from gsv_core.channels.slack.conversion import proxy_for
from gsv_core.channels.slack.conversion import ts_to_ms
from gsv_core.channels.slack.formatting import mentioned_ids
from gsv_core.channels.slack.formatting import to_plain
from gsv_core.channels.slack.sending import target_of
from gsv_core.errors import Unauthorized

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

log = logging.getLogger(__name__)

MAX_FRAME = 4 * 1024 * 1024  # envelopes carry whole events with their blocks
OPEN_TIMEOUT = 15.0
# message subtypes that are something a person said (edits, joins, bots... are not)
_SPOKEN = {None, "file_share", "thread_broadcast", "me_message"}


class SlackSocket(AccountAdapter[Account]):
    """Connecting and receiving for `SlackChannel`."""

    async def _connect(self, account: Account) -> str | None:
        """A fresh Socket Mode URL (after auth.test, until it passed once). None when Slack
        could not be reached; raises Unauthorized when it refused a token."""
        from slack_sdk.errors import SlackApiError

        step = "bot token"
        try:
            if not account.status.authenticated:
                await self._authenticate(account)
            step = "app token"
            opened = await account.web.apps_connections_open(app_token=account.settings.app_token)
            return str(opened["url"])
        except SlackApiError as exc:
            error = error_code(exc)
            if error in AUTH_ERRORS:
                key = setting_key(
                    account.status.account_id, "botToken" if step == "bot token" else "appToken"
                )
                message = f"slack rejected the {step} ({error}): check {key}"
                # a refused app token means the bot token did pass auth.test
                self._update(account, connected=False, authenticated=step == "app token",
                             error=message)  # fmt: skip
                raise Unauthorized(message) from None
            self._update(account, connected=False, error=f"slack refused to connect: {error}")
        except network_errors() as exc:
            reason = f"slack unreachable: {masked_reason(exc, account.settings)}"
            self._update(account, connected=False, error=reason)
        log.warning("slack account %s: %s; retrying", account.status.account_id,
                    account.status.error)  # fmt: skip
        return None

    async def _authenticate(self, account: Account) -> None:
        auth = await account.web.auth_test()
        account.bot_user_id = str(auth["user_id"])
        account.bot_name = str(auth.get("user") or "bot")
        account.status.extra = {
            "botUserId": account.bot_user_id,
            "botName": account.bot_name,
            "team": auth.get("team"),
            "teamId": auth.get("team_id"),
        }
        self._update(account, authenticated=True)

    async def _run(self, account: Account, url: str | None) -> None:
        """Keep a socket open: at once after a healthy session ends, with backoff after
        failures, never after a rejected token."""
        failures = 0
        while True:
            if url is not None:
                failures = 0 if await self._session(account, url) else failures + 1
            if failures:
                await self._sleep(self._backoff(failures))
            try:
                url = await self._connect(account)
            except Unauthorized as exc:
                log.error("slack account %s stopped: %s", account.status.account_id, exc.message)
                return
            if url is None:
                failures += 1

    async def _session(self, account: Account, url: str) -> bool:
        """One Socket Mode connection, until it ends; True when Slack said hello."""
        from websockets.asyncio.client import connect

        hello = False
        reason: str | None = "slack closed the socket"
        try:
            async with connect(url, proxy=proxy_for(url), max_size=MAX_FRAME,
                               compression=None, open_timeout=OPEN_TIMEOUT) as socket:  # fmt: skip
                async for raw in socket:
                    frame = parse_frame(raw)
                    if frame.get("type") == "hello":
                        hello = True
                        self._update(account, connected=True, error=None)
                        log.info("slack account %s connected", account.status.account_id)
                    elif frame.get("type") == "disconnect":  # Slack rotates sockets
                        reason = None
                        break
                    elif frame.get("envelope_id"):
                        await self._envelope(account, socket, frame)
        except network_errors() as exc:
            reason = f"slack connection lost: {masked_reason(exc, account.settings)}"
        if reason:
            log.warning("slack account %s: %s", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)
        return hello

    async def _envelope(
        self, account: Account, socket: ClientConnection, frame: dict[str, Any]
    ) -> None:
        """Hand an event over, then acknowledge the envelope. An event that could not be
        handed over is not acknowledged: Slack sends it again. A button press is
        acknowledged first, then handled."""
        if frame.get("type") == "interactive":
            await socket.send(json.dumps({"envelope_id": frame["envelope_id"]}))
            payload = frame.get("payload") or {}
            if payload.get("type") == "block_actions":
                await self._press(account, payload)
            return
        if frame.get("type") == "events_api":
            event = (frame.get("payload") or {}).get("event") or {}
            try:
                message = await self._inbound(account, event)
                if message is not None:
                    account.status.last_activity = self._now_ms()
                    await account.sink.inbound(message)
            except Exception:
                log.exception("slack event %s not handed over", frame.get("envelope_id"))
                return
        await socket.send(json.dumps({"envelope_id": frame["envelope_id"]}))

    async def _inbound(self, account: Account, event: dict[str, Any]) -> InboundMessage | None:
        if event.get("type") not in ("message", "app_mention"):
            return None
        user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
        if (
            event.get("subtype") not in _SPOKEN
            or event.get("bot_id")
            or not (user and channel and ts)
        ):
            return None
        if user == account.bot_user_id:
            return None  # our own replies
        raw = str(event.get("text") or "")
        text = to_plain(raw, {account.bot_user_id: account.bot_name})
        files = event.get("files") or []
        media, notes = sort_downloads([await download(account.settings, f) for f in files])
        if not (text or media or notes):
            return None
        name = await self._user_name(account, str(user))
        ids = mentioned_ids(raw)
        thread_ts = event.get("thread_ts")
        in_thread = bool(thread_ts) and thread_ts != ts
        if event.get("channel_type"):
            account.channel_types[str(channel)] = str(event["channel_type"])
        channel_type = account.channel_types.get(str(channel)) or guess_type(str(channel))
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=peer_of(event, channel_type, name),
            sender=Sender(str(user), name),
            message_id=f"{channel}:{ts}",
            text="\n".join(part for part in (text, *notes) if part),
            timestamp=ts_to_ms(str(ts)),
            reply_to_id=f"{channel}:{thread_ts}" if in_thread else None,
            reply_to_bot=in_thread and event.get("parent_user_id") == account.bot_user_id,
            media=tuple(media),
            was_mentioned=event["type"] == "app_mention" or account.bot_user_id in ids,
            mentioned_ids=ids,
        )

    async def _press(self, account: Account, payload: dict[str, Any]) -> None:
        """Hand a button press to the sink; show its answer to the presser alone."""
        event = await self._action_event(account, payload)
        if event is None:
            log.info("slack sent a button press without user, channel or action")
            return
        account.status.last_activity = self._now_ms()
        try:
            answer = await account.sink.action(event)
        except Exception:
            log.exception("slack button press %s not handled", event.action_id[:80])
            answer = "Something went wrong; try again."
        if answer:
            await self._whisper(account, event, answer)

    async def _action_event(self, account: Account, payload: dict[str, Any]) -> ActionEvent | None:
        user = (payload.get("user") or {}).get("id")
        channel = (payload.get("channel") or {}).get("id")
        actions = payload.get("actions") or []
        action_id = actions[0].get("action_id") if actions else None
        if not (user and channel and isinstance(action_id, str)):
            return None
        message = payload.get("message") or {}
        place = {"channel": channel, "ts": message.get("ts"),
                 "thread_ts": message.get("thread_ts")}  # fmt: skip
        channel_type = account.channel_types.get(str(channel)) or guess_type(str(channel))
        name = await self._user_name(account, str(user))
        return ActionEvent(
            channel=self.name,
            account_id=account.status.account_id,
            peer=peer_of(place, channel_type, name),
            sender=Sender(str(user), name),
            action_id=action_id,
            message_id=str(message["ts"]) if message.get("ts") else None,
        )

    async def _whisper(self, account: Account, event: ActionEvent, text: str) -> None:
        from slack_sdk.errors import SlackApiError

        channel, thread_ts = target_of(event.peer)
        try:
            await account.web.chat_postEphemeral(
                channel=channel, user=event.sender.id, text=text, thread_ts=thread_ts
            )
        except SlackApiError as exc:
            log.info("slack could not answer a button press: %s", error_code(exc))
        except network_errors() as exc:
            log.info(
                "slack could not answer a button press: %s", masked_reason(exc, account.settings)
            )

    async def _user_name(self, account: Account, user_id: str) -> str | None:
        """A person's display name (users.info, cached); None without the users:read scope."""
        if user_id in account.names:
            return account.names[user_id]
        from slack_sdk.errors import SlackApiError

        try:
            found = (await account.web.users_info(user=user_id)).get("user") or {}
        except SlackApiError as exc:
            log.info("slack users.info %s failed: %s", user_id, error_code(exc))
            account.names[user_id] = None
            return None
        except network_errors():
            return None
        profile = found.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or found.get("name")
        account.names[user_id] = str(name) if name else None
        return account.names[user_id]
