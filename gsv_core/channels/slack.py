"""The Slack adapter: one Slack app per account, receiving over Socket Mode and sending
with the Web API (slack-sdk's `AsyncWebClient`).

Socket Mode is a WebSocket whose single-use URL comes from `apps.connections.open` (app
token, `xapp-`); the socket itself is plain `websockets`, which keeps reconnecting ours
to shape: a dropped socket is reopened at once, repeated failures back off (jittered,
exponential), a rejected token stops the account with a clear status. Every envelope is
acknowledged after `sink.inbound()` returned (the message is in the journal), so Slack
redelivers what a crash lost and the journal drops duplicates.

Conversations: `im` -> dm, `mpim` -> group, public and private channels -> channel;
a reply inside a thread is peer kind `thread` with id `{channel}:{thread_ts}`
(its own session) and the answer goes into that thread. Slack offers bots no typing
indicator.

Buttons are Block Kit: the text in section blocks and an actions block under it. A press
arrives as an `interactive` envelope (`block_actions`); it is acknowledged at once (Slack
wants that within three seconds; a lost press is retried by pressing again), handed to
`sink.action()`, and the answer is shown to the presser alone (chat.postEphemeral).
Needs Interactivity turned on for the app.

The tokens travel only in Authorization headers (slack-sdk redacts them in its debug
logs); messages built from exceptions are masked all the same.

slack_sdk, websockets and httpx are imported when an account starts, not with this module.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from gsv_core.channels.base import (
    AccountStatus,
    Action,
    ActionEvent,
    Capabilities,
    ChannelSink,
    InboundMessage,
    LoginResult,
    Media,
    OutboundMessage,
    Peer,
    Sender,
)
from gsv_core.channels.slack_format import MAX_TEXT, mentioned_ids, to_mrkdwn, to_plain
from gsv_core.errors import GsvError, InvalidParams, RateLimited, Unauthorized, Unavailable

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient
    from websockets.asyncio.client import ClientConnection

log = logging.getLogger(__name__)

DEFAULT_API = "https://slack.com/api/"
MAX_MEDIA_BYTES = 25 * 1024 * 1024
MAX_FRAME = 4 * 1024 * 1024  # envelopes carry whole events with their blocks
OPEN_TIMEOUT = 15.0
SECTION_TEXT = 3000  # Block Kit's limit for one section's text
# errors that mean "this token will never work": stop instead of retrying forever
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked",
                         "token_expired", "not_allowed_token_type"})  # fmt: skip
# private channels ("group" in events) are channels too; multi-person DMs are groups
_KINDS = {"im": "dm", "mpim": "group", "group": "channel", "channel": "channel"}
# message subtypes that are something a person said (edits, joins, bots... are not)
_SPOKEN = {None, "file_share", "thread_broadcast", "me_message"}


@dataclass(frozen=True)
class _Settings:
    app_token: str
    bot_token: str
    api_base: str

    def mask(self, text: str) -> str:
        for secret in (self.app_token, self.bot_token):
            text = text.replace(secret, "***")
        return text


@dataclass
class _Account:
    status: AccountStatus
    sink: ChannelSink
    settings: _Settings
    web: AsyncWebClient
    bot_user_id: str = ""
    bot_name: str = ""
    names: dict[str, str | None] = field(default_factory=dict)  # user id -> display name
    # channel id -> channel_type seen on message events (app_mention events lack it)
    channel_types: dict[str, str] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


class SlackChannel:
    """Slack apps (one per account id) over Socket Mode."""

    name = "slack"
    capabilities = Capabilities(
        chat_types=("dm", "group", "channel", "thread"),
        media=True,
        threads=True,
        typing=False,
        buttons=True,
        max_text=MAX_TEXT,
    )

    def __init__(
        self,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        min_backoff: float = 1.0,
        max_backoff: float = 60.0,
    ) -> None:
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._accounts: dict[str, _Account] = {}
        self._statuses: dict[str, AccountStatus] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Check both tokens (auth.test, apps.connections.open), then keep the socket open
        in the background. Unreachable Slack is not fatal: the account keeps trying."""
        settings = _settings(config, account_id)
        await self.stop(account_id)
        status = AccountStatus(account_id, mode="socket")
        self._statuses[account_id] = status
        account = _Account(status, sink, settings, _web_client(settings))
        url = await self._connect(account)
        self._accounts[account_id] = account
        account.task = asyncio.create_task(self._run(account, url), name=f"slack:{account_id}")

    async def stop(self, account_id: str) -> None:
        account = self._accounts.pop(account_id, None)
        if account is None:
            return
        if account.task is not None:
            account.task.cancel()
            await asyncio.wait([account.task])  # our own cancellation still propagates
        self._update(account, connected=False)
        log.info("slack account %s stopped", account_id)

    def status(self, account_id: str | None = None) -> list[AccountStatus]:
        return [
            replace(s, extra=dict(s.extra))
            for key, s in self._statuses.items()
            if account_id in (None, key)
        ]

    async def login(self, account_id: str, force: bool) -> LoginResult:
        account = self._accounts.get(account_id)
        if account is not None and account.status.connected and not force:
            team = account.status.extra.get("team", "its workspace")
            return LoginResult(f"Slack app @{account.bot_name} is connected to {team}.")
        start = "gsv channels start slack" + ("" if account_id == "default" else f" {account_id}")
        return LoginResult(
            "Slack has no QR login: the app connects with two tokens over Socket Mode.\n"
            "1. Create an app at https://api.slack.com/apps (From scratch) in your workspace.\n"
            "2. Socket Mode: turn it on and create an app-level token with the "
            "connections:write scope (xapp-...).\n"
            "3. OAuth & Permissions, Bot Token Scopes: app_mentions:read, chat:write, "
            "im:history, channels:history, groups:history, mpim:history, files:read, "
            "users:read.\n"
            "4. Event Subscriptions: on; bot events message.im, message.channels, "
            "message.groups, message.mpim, app_mention. Interactivity & Shortcuts: on "
            "(for the Allow / Deny buttons of approvals).\n"
            "5. App Home: allow users to send messages from the Messages tab.\n"
            "6. Install the app to the workspace and copy the Bot User OAuth Token (xoxb-...).\n"
            f"7. gsv config set {_key(account_id, 'appToken')} xapp-...\n"
            f"   gsv config set {_key(account_id, 'botToken')} xoxb-...\n"
            f"8. {start}   (then invite the app to a channel with /invite @yourapp)"
        )

    async def logout(self, account_id: str) -> None:
        await self.stop(account_id)
        log.info("slack account %s logged out; its tokens stay in config", account_id)

    # -- connecting --------------------------------------------------------------------------

    async def _connect(self, account: _Account) -> str | None:
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
            error = _error_code(exc)
            if error in AUTH_ERRORS:
                key = _key(
                    account.status.account_id, "botToken" if step == "bot token" else "appToken"
                )
                message = f"slack rejected the {step} ({error}): check {key}"
                # a refused app token means the bot token did pass auth.test
                self._update(account, connected=False, authenticated=step == "app token",
                             error=message)  # fmt: skip
                raise Unauthorized(message) from None
            self._update(account, connected=False, error=f"slack refused to connect: {error}")
        except _network_errors() as exc:
            reason = f"slack unreachable: {_reason(exc, account.settings)}"
            self._update(account, connected=False, error=reason)
        log.warning("slack account %s: %s; retrying", account.status.account_id,
                    account.status.error)  # fmt: skip
        return None

    async def _authenticate(self, account: _Account) -> None:
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

    async def _run(self, account: _Account, url: str | None) -> None:
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

    async def _session(self, account: _Account, url: str) -> bool:
        """One Socket Mode connection, until it ends; True when Slack said hello."""
        from websockets.asyncio.client import connect

        hello = False
        reason: str | None = "slack closed the socket"
        try:
            async with connect(url, proxy=_proxy_for(url), max_size=MAX_FRAME,
                               compression=None, open_timeout=OPEN_TIMEOUT) as socket:  # fmt: skip
                async for raw in socket:
                    frame = _frame(raw)
                    if frame.get("type") == "hello":
                        hello = True
                        self._update(account, connected=True, error=None)
                        log.info("slack account %s connected", account.status.account_id)
                    elif frame.get("type") == "disconnect":  # Slack rotates sockets
                        reason = None
                        break
                    elif frame.get("envelope_id"):
                        await self._envelope(account, socket, frame)
        except _network_errors() as exc:
            reason = f"slack connection lost: {_reason(exc, account.settings)}"
        if reason:
            log.warning("slack account %s: %s", account.status.account_id, reason)
        self._update(account, connected=False, error=reason)
        return hello

    def _backoff(self, failures: int) -> float:
        """Jittered exponential backoff: half fixed, half random, capped."""
        ceiling = min(self._max_backoff, self._min_backoff * 2.0 ** min(failures - 1, 16))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    # -- receiving ---------------------------------------------------------------------------

    async def _envelope(
        self, account: _Account, socket: ClientConnection, frame: dict[str, Any]
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

    async def _inbound(self, account: _Account, event: dict[str, Any]) -> InboundMessage | None:
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
        media, notes = await self._download_all(account, event.get("files") or [])
        if not (text or media or notes):
            return None
        name = await self._user_name(account, str(user))
        ids = mentioned_ids(raw)
        thread_ts = event.get("thread_ts")
        in_thread = bool(thread_ts) and thread_ts != ts
        if event.get("channel_type"):
            account.channel_types[str(channel)] = str(event["channel_type"])
        channel_type = account.channel_types.get(str(channel)) or _guess_type(str(channel))
        return InboundMessage(
            channel=self.name,
            account_id=account.status.account_id,
            peer=_peer(event, channel_type, name),
            sender=Sender(str(user), name),
            message_id=f"{channel}:{ts}",
            text="\n".join(part for part in (text, *notes) if part),
            timestamp=_ms(str(ts)),
            reply_to_id=f"{channel}:{thread_ts}" if in_thread else None,
            reply_to_bot=in_thread and event.get("parent_user_id") == account.bot_user_id,
            media=tuple(media),
            was_mentioned=event["type"] == "app_mention" or account.bot_user_id in ids,
            mentioned_ids=ids,
        )

    async def _press(self, account: _Account, payload: dict[str, Any]) -> None:
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

    async def _action_event(self, account: _Account, payload: dict[str, Any]) -> ActionEvent | None:
        user = (payload.get("user") or {}).get("id")
        channel = (payload.get("channel") or {}).get("id")
        actions = payload.get("actions") or []
        action_id = actions[0].get("action_id") if actions else None
        if not (user and channel and isinstance(action_id, str)):
            return None
        message = payload.get("message") or {}
        place = {"channel": channel, "ts": message.get("ts"),
                 "thread_ts": message.get("thread_ts")}  # fmt: skip
        channel_type = account.channel_types.get(str(channel)) or _guess_type(str(channel))
        name = await self._user_name(account, str(user))
        return ActionEvent(
            channel=self.name,
            account_id=account.status.account_id,
            peer=_peer(place, channel_type, name),
            sender=Sender(str(user), name),
            action_id=action_id,
            message_id=str(message["ts"]) if message.get("ts") else None,
        )

    async def _whisper(self, account: _Account, event: ActionEvent, text: str) -> None:
        from slack_sdk.errors import SlackApiError

        channel, thread_ts = _target(event.peer)
        try:
            await account.web.chat_postEphemeral(
                channel=channel, user=event.sender.id, text=text, thread_ts=thread_ts
            )
        except SlackApiError as exc:
            log.info("slack could not answer a button press: %s", _error_code(exc))
        except _network_errors() as exc:
            log.info("slack could not answer a button press: %s", _reason(exc, account.settings))

    async def _user_name(self, account: _Account, user_id: str) -> str | None:
        """A person's display name (users.info, cached); None without the users:read scope."""
        if user_id in account.names:
            return account.names[user_id]
        from slack_sdk.errors import SlackApiError

        try:
            found = (await account.web.users_info(user=user_id)).get("user") or {}
        except SlackApiError as exc:
            log.info("slack users.info %s failed: %s", user_id, _error_code(exc))
            account.names[user_id] = None
            return None
        except _network_errors():
            return None
        profile = found.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or found.get("name")
        account.names[user_id] = str(name) if name else None
        return account.names[user_id]

    async def _download_all(
        self, account: _Account, files: list[dict[str, Any]]
    ) -> tuple[list[Media], list[str]]:
        media: list[Media] = []
        notes: list[str] = []
        for file in files:
            result = await _download(account.settings, file)
            if isinstance(result, Media):
                media.append(result)
            else:
                notes.append(result)
        return media, notes

    # -- sending -----------------------------------------------------------------------------

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Post mrkdwn text; in a thread, into that thread. Returns the message's ts."""
        from slack_sdk.errors import SlackApiError

        account = self._running(account_id)
        channel, thread_ts = _target(message.peer)
        text = to_mrkdwn(message.text)
        try:
            sent = await account.web.chat_postMessage(
                channel=channel, text=text, thread_ts=thread_ts,
                blocks=_blocks(text, message.actions),
            )  # fmt: skip
        except SlackApiError as exc:
            raise _api_error(exc) from None
        except _network_errors() as exc:
            reason = f"slack unreachable: {_reason(exc, account.settings)}"
            raise Unavailable(reason) from None
        account.status.last_activity = self._now_ms()
        return str(sent.get("ts") or "") or None

    async def edit(self, account_id: str, peer: Peer, message_id: str, text: str) -> None:
        """Replace a sent message's text; an empty `blocks` drops its buttons."""
        from slack_sdk.errors import SlackApiError

        account = self._running(account_id)
        channel, _ = _target(peer)
        try:
            await account.web.chat_update(
                channel=channel, ts=message_id, text=to_mrkdwn(text), blocks=[]
            )
        except SlackApiError as exc:
            raise _api_error(exc) from None
        except _network_errors() as exc:
            raise Unavailable(f"slack unreachable: {_reason(exc, account.settings)}") from None

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """Slack has no typing indicator for bots (capabilities.typing is False)."""

    # -- helpers -----------------------------------------------------------------------------

    def _running(self, account_id: str) -> _Account:
        account = self._accounts.get(account_id)
        if account is None:
            raise Unavailable(f"slack account '{account_id}' is not running")
        return account

    def _update(self, account: _Account, **changes: Any) -> None:
        """Change the account's status; tell the sink when something changed."""
        status = account.status
        if all(getattr(status, key) == value for key, value in changes.items()):
            return
        for key, value in changes.items():
            setattr(status, key, value)
        try:
            account.sink.status_changed(self.name, replace(status, extra=dict(status.extra)))
        except Exception:
            log.exception("slack status callback failed")

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


# -- pure parts --------------------------------------------------------------------------------


def _settings(config: dict[str, Any], account_id: str) -> _Settings:
    tokens: dict[str, str] = {}
    for key, prefix, what in (("appToken", "xapp-", "an app-level token (Socket Mode)"),
                              ("botToken", "xoxb-", "a bot token")):  # fmt: skip
        value = config.get(key)
        if not isinstance(value, str) or not value.strip().startswith(prefix):
            problem = "is not set" if not value else f"does not start with {prefix}"
            raise InvalidParams(
                f"slack needs {what}: {_key(account_id, key)} {problem}. "
                f"`gsv channels login slack` explains how to get one."
            )
        tokens[key] = value.strip()
    base = config.get("apiBaseUrl") or DEFAULT_API
    if not isinstance(base, str) or urlsplit(base).scheme not in ("http", "https"):
        raise InvalidParams(f"channels.slack.apiBaseUrl must be an http(s) URL, not {base!r}")
    return _Settings(tokens["appToken"], tokens["botToken"], base.rstrip("/") + "/")


def _web_client(settings: _Settings) -> AsyncWebClient:
    from slack_sdk.web.async_client import AsyncWebClient

    return AsyncWebClient(token=settings.bot_token, base_url=settings.api_base, timeout=30)


def _network_errors() -> tuple[type[BaseException], ...]:
    import aiohttp
    from websockets.exceptions import WebSocketException

    return (OSError, TimeoutError, aiohttp.ClientError, WebSocketException)


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    try:
        return str(response["error"]) if response is not None else "unknown_error"
    except (KeyError, TypeError):
        return "unknown_error"


def _api_error(exc: Exception) -> GsvError:
    error = _error_code(exc)
    if error in AUTH_ERRORS:
        return Unauthorized(f"slack rejected the bot token ({error})")
    if error == "ratelimited":
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        wait = float(headers.get("Retry-After", 1) or 1)
        return RateLimited(f"slack rate limit: retry after {wait:g} s",
                           details={"retryAfter": wait})  # fmt: skip
    return InvalidParams(f"slack refused the message: {error}")


def _reason(exc: BaseException, settings: _Settings) -> str:
    return settings.mask(str(exc).strip() or type(exc).__name__)[:200]


def _frame(raw: str | bytes) -> dict[str, Any]:
    try:
        frame = json.loads(raw)
    except ValueError:
        log.warning("slack sent a frame that is not JSON")
        return {}
    return frame if isinstance(frame, dict) else {}


def _proxy_for(url: str) -> Literal[True] | None:
    # websockets honours proxy variables even for 127.0.0.1 (test servers)
    host = urlsplit(url).hostname or ""
    return None if host in ("127.0.0.1", "::1", "localhost") else True


def _guess_type(channel: str) -> str:
    """A channel's type from its id alone (D: a DM; anything else is taken as a channel)."""
    return "im" if channel.startswith("D") else "channel"


def _peer(event: dict[str, Any], channel_type: str, sender_name: str | None) -> Peer:
    channel, ts, thread_ts = str(event["channel"]), event.get("ts"), event.get("thread_ts")
    kind = _KINDS.get(channel_type, "channel")
    thread = str(thread_ts) if thread_ts and thread_ts != ts else None
    if kind == "dm":
        return Peer("dm", channel, name=sender_name, thread_id=thread)
    if thread:
        return Peer("thread", f"{channel}:{thread}", thread_id=thread)
    return Peer(kind, channel)


def _blocks(text: str, actions: tuple[Action, ...]) -> list[dict[str, Any]] | None:
    """Block Kit for a message with buttons (None: plain text is enough)."""
    if not actions:
        return None
    sections: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[i : i + SECTION_TEXT]}}
        for i in range(0, len(text), SECTION_TEXT)
    ]
    buttons: list[dict[str, Any]] = []
    for action in actions:
        button = {"type": "button", "action_id": action.id, "value": action.id,
                  "text": {"type": "plain_text", "text": action.label}}  # fmt: skip
        if action.style != "default":
            button["style"] = action.style
        buttons.append(button)
    return [*sections, {"type": "actions", "elements": buttons}]


def _target(peer: Peer) -> tuple[str, str | None]:
    """(channel id, thread ts) of a peer; a thread peer's id is `{channel}:{thread_ts}`."""
    channel, _, thread = peer.id.partition(":")
    return channel, peer.thread_id or thread or None


def _ms(ts: str) -> int | None:
    try:
        return int(float(ts) * 1000)
    except ValueError:
        return None


def _kind_of(mime: str) -> str:
    top = mime.split("/", 1)[0]
    return {"image": "image", "audio": "audio", "video": "video"}.get(top, "document")


def _may_carry_token(url: str, settings: _Settings) -> bool:
    """The bot token goes only to Slack's own hosts (or the configured test API host)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host == urlsplit(settings.api_base).hostname:
        return True
    return parts.scheme == "https" and (host == "slack.com" or host.endswith(".slack.com"))


async def _download(settings: _Settings, file: dict[str, Any]) -> Media | str:
    """A shared file as inline base64 Media, or a note for the text saying why not."""
    import httpx

    name = str(file.get("name") or file.get("title") or "file")
    url = file.get("url_private_download") or file.get("url_private")
    size = file.get("size")
    if not isinstance(url, str) or file.get("mode") in ("tombstone", "hidden_by_limit"):
        return f"[attachment not available: {name}]"
    if isinstance(size, int) and size > MAX_MEDIA_BYTES:
        return f"[attachment skipped: {name} is {size / 1_048_576:.1f} MB, over the 25 MB limit]"
    if not _may_carry_token(url, settings):
        return f"[attachment not downloaded: {name}]"
    mime = str(file.get("mimetype") or "application/octet-stream")
    headers = {"Authorization": f"Bearer {settings.bot_token}"}
    data = bytearray()
    try:
        async with (
            httpx.AsyncClient(timeout=30, follow_redirects=True) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code != 200 or (
                response.headers.get("content-type", "").startswith("text/html")
                and not mime.startswith("text/html")
            ):  # Slack answers a login page when the files:read scope is missing
                return f"[attachment not downloaded: {name} (HTTP {response.status_code})]"
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > MAX_MEDIA_BYTES:
                    return f"[attachment skipped: {name} is over the 25 MB limit]"
    except httpx.HTTPError as exc:
        log.warning("slack file %s not downloaded: %s", name, _reason(exc, settings))
        return f"[attachment not downloaded: {name}]"
    return Media(type=_kind_of(mime), mime_type=mime, filename=name, size=len(data),
                 data=base64.b64encode(bytes(data)).decode("ascii"))  # fmt: skip


def _key(account_id: str, name: str) -> str:
    if account_id in ("", "default"):
        return f"channels.slack.{name}"
    return f"channels.slack.accounts.{account_id}.{name}"
