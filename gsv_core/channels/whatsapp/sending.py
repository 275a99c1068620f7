"""Sending to WhatsApp: a text message (a reply quotes the message it answers), with
`preview_url` false unless the owner turned link previews on. A send that finds the
Graph API unreachable marks the account lost and starts re-checking."""

from __future__ import annotations

import re
from typing import Any

from gsv_core.channels.base import OutboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.whatsapp.account import graph_error
from gsv_core.channels.whatsapp.account import masked_reason
from gsv_core.channels.whatsapp.connection import WhatsAppConnection
from gsv_core.channels.whatsapp.formatting import to_whatsapp
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unauthorized
from gsv_core.errors import Unavailable


class WhatsAppSending(WhatsAppConnection):
    """Sending for `WhatsAppChannel`."""

    async def send(self, account_id: str, message: OutboundMessage) -> str | None:
        """Send a text message (a reply quotes the message it answers); returns its wamid."""
        import httpx

        account = self._running(account_id)
        to = re.sub(r"\D", "", message.peer.id)
        if not to:
            raise InvalidParams(
                f"whatsapp needs a phone number to write to, not {message.peer.id!r}"
            )
        body: dict[str, Any] = {
            "messaging_product": "whatsapp", "recipient_type": "individual", "to": to,
            "type": "text",
            "text": {"preview_url": message.link_previews, "body": to_whatsapp(message.text)},
        }  # fmt: skip
        if message.reply_to_id:
            body["context"] = {"message_id": message.reply_to_id}
        try:
            response = await account.client.post(
                f"{account.settings.phone_number_id}/messages", json=body
            )
        except httpx.HTTPError as exc:
            reason = f"graph api unreachable: {masked_reason(exc, account.settings)}"
            self._lost(account, reason)
            self._recheck_later(account)
            raise Unavailable(reason) from None
        if response.status_code >= 400:
            error = graph_error(response, account.settings)
            if isinstance(error, Unauthorized):
                self._update(account, connected=False, authenticated=False, error=error.message)
            raise error
        account.status.last_activity = self._now_ms()
        if not account.status.connected:  # the Graph API is back (and took our token)
            self._update(account, connected=True, authenticated=True, error=None)
        sent = response.json().get("messages") or [{}]
        return str(sent[0].get("id") or "") or None

    async def set_typing(self, account_id: str, peer: Peer, typing: bool) -> None:
        """No typing indicator here (capabilities.typing is False)."""
