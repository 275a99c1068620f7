"""The WhatsApp adapter: the official WhatsApp Business Cloud API (Meta's Graph API) over
httpx. Messages arrive as webhooks at `/channels/whatsapp/webhook` on the gateway's own
port (the HTTP front door); replies go out with `POST /{phoneNumberId}/messages`.

- `account`: credentials from config, per-account state, Graph API errors
- `connection`: checking the credentials, and re-checking after the Graph API was lost
- `webhook`: the verify handshake, signed deliveries, messages and media to the sink
- `sending`: text replies
- `conversion`: the messages of a webhook payload, media kinds, timestamps
- `formatting`: agent Markdown as WhatsApp formatting
- `channel`: `WhatsAppChannel`, the surface the channel manager uses

The access token travels only in the Authorization header. httpx is imported when an
account starts, not with this package.
"""

from gsv_core.channels.whatsapp.channel import WEBHOOK_PATH
from gsv_core.channels.whatsapp.channel import WhatsAppChannel
from gsv_core.channels.whatsapp.formatting import to_whatsapp

__all__ = ["WEBHOOK_PATH", "WhatsAppChannel", "to_whatsapp"]
