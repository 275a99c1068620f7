"""Sending to Slack: mrkdwn text (into the thread when the peer is one), Block Kit
buttons, edits. Slack offers bots no typing indicator.

Posts and edits say `unfurl_links` and `unfurl_media` false unless the owner turned link
previews on (`OutboundMessage.link_previews`). Slack's reference lists the two for
chat.postMessage only; chat.update is sent them as well, in case an edit would unfurl."""

from __future__ import annotations

from typing import Any

from gsv_core.channels.accounts import AccountAdapter
from gsv_core.channels.base import Action
from gsv_core.channels.base import MessageEdit
from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.slack.account import Account
from gsv_core.channels.slack.account import api_error
from gsv_core.channels.slack.account import masked_reason
from gsv_core.channels.slack.account import network_errors
from gsv_core.channels.slack.formatting import to_mrkdwn
from gsv_core.errors import Unavailable

SECTION_TEXT = 3000  # Block Kit's limit for one section's text


class SlackSending(AccountAdapter[Account]):
    """Sending and editing for `SlackChannel`."""

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Post mrkdwn text; in a thread, into that thread. Returns the message's ts."""
        from slack_sdk.errors import SlackApiError

        account = self._running(account_id)
        channel, thread_ts = target_of(message.peer)
        text = to_mrkdwn(message.text)
        try:
            sent = await account.web.chat_postMessage(
                channel=channel, text=text, thread_ts=thread_ts,
                blocks=blocks_of(text, message.actions),
                unfurl_links=message.link_previews, unfurl_media=message.link_previews,
            )  # fmt: skip
        except SlackApiError as exc:
            raise api_error(exc) from None
        except network_errors() as exc:
            reason = f"slack unreachable: {masked_reason(exc, account.settings)}"
            raise Unavailable(reason) from None
        account.status.last_activity = self._now_ms()
        return str(sent.get("ts") or "") or None

    async def edit(self, edit: MessageEdit) -> None:
        """Replace a sent message's text; an empty `blocks` drops its buttons."""
        from slack_sdk.errors import SlackApiError

        account = self._running(edit.account_id)
        channel, _ = target_of(edit.peer)
        previews = edit.link_previews
        try:
            await account.web.chat_update(
                channel=channel, ts=edit.message_id, text=to_mrkdwn(edit.text), blocks=[],
                unfurl_links=previews, unfurl_media=previews,
            )  # fmt: skip
        except SlackApiError as exc:
            raise api_error(exc) from None
        except network_errors() as exc:
            raise Unavailable(
                f"slack unreachable: {masked_reason(exc, account.settings)}"
            ) from None

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """Slack has no typing indicator for bots (capabilities.typing is False)."""


def blocks_of(text: str, actions: tuple[Action, ...]) -> list[dict[str, Any]] | None:
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


def target_of(peer: Peer) -> tuple[str, str | None]:
    """(channel id, thread ts) of a peer; a thread peer's id is `{channel}:{thread_ts}`."""
    channel, _, thread = peer.id.partition(":")
    return channel, peer.thread_id or thread or None
