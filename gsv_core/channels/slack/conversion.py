"""Slack's data as gsv's: Socket Mode frames, conversation kinds and peers, timestamps,
and shared files downloaded into inline base64 Media (the bot token goes only to Slack's
own hosts).

Conversations: `im` -> dm, `mpim` -> group, public and private channels -> channel; a
reply inside a thread is peer kind `thread` with id `{channel}:{thread_ts}` (its own
session) and the answer goes into that thread.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from typing import Literal
from urllib.parse import urlsplit

from gsv_core.channels.base import Media
from gsv_core.channels.base import Peer
from gsv_core.channels.media import media_kind
from gsv_core.channels.media import too_big_note
from gsv_core.channels.slack.account import Settings
from gsv_core.channels.slack.account import masked_reason

log = logging.getLogger(__name__)

MAX_MEDIA_BYTES = 25 * 1024 * 1024
# private channels ("group" in events) are channels too; multi-person DMs are groups
_KINDS = {"im": "dm", "mpim": "group", "group": "channel", "channel": "channel"}


def parse_frame(raw: str | bytes) -> dict[str, Any]:
    try:
        frame = json.loads(raw)
    except ValueError:
        log.warning("slack sent a frame that is not JSON")
        return {}
    return frame if isinstance(frame, dict) else {}


def proxy_for(url: str) -> Literal[True] | None:
    # websockets honours proxy variables even for 127.0.0.1 (test servers)
    host = urlsplit(url).hostname or ""
    return None if host in ("127.0.0.1", "::1", "localhost") else True


def guess_type(channel: str) -> str:
    """A channel's type from its id alone (D: a DM; anything else is taken as a channel)."""
    return "im" if channel.startswith("D") else "channel"


def peer_of(event: dict[str, Any], channel_type: str, sender_name: str | None) -> Peer:
    channel, ts, thread_ts = str(event["channel"]), event.get("ts"), event.get("thread_ts")
    kind = _KINDS.get(channel_type, "channel")
    thread = str(thread_ts) if thread_ts and thread_ts != ts else None
    if kind == "dm":
        return Peer("dm", channel, name=sender_name, thread_id=thread)
    if thread:
        return Peer("thread", f"{channel}:{thread}", thread_id=thread)
    return Peer(kind, channel)


def ts_to_ms(ts: str) -> int | None:
    try:
        return int(float(ts) * 1000)
    except ValueError:
        return None


def _may_carry_token(url: str, settings: Settings) -> bool:
    """The bot token goes only to Slack's own hosts (or the configured test API host)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host == urlsplit(settings.api_base).hostname:
        return True
    return parts.scheme == "https" and (host == "slack.com" or host.endswith(".slack.com"))


async def download(settings: Settings, file: dict[str, Any]) -> Media | str:
    """A shared file as inline base64 Media, or a note for the text saying why not."""
    import httpx

    name = str(file.get("name") or file.get("title") or "file")
    url = file.get("url_private_download") or file.get("url_private")
    size = file.get("size")
    if not isinstance(url, str) or file.get("mode") in ("tombstone", "hidden_by_limit"):
        return f"[attachment not available: {name}]"
    if isinstance(size, int) and size > MAX_MEDIA_BYTES:
        return too_big_note(name, size, MAX_MEDIA_BYTES)
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
        log.warning("slack file %s not downloaded: %s", name, masked_reason(exc, settings))
        return f"[attachment not downloaded: {name}]"
    return Media(type=media_kind(mime), mime_type=mime, filename=name, size=len(data),
                 data=base64.b64encode(bytes(data)).decode("ascii"))  # fmt: skip
