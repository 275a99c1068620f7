"""`WhatsAppChannel`: the WhatsApp adapter's surface (start, stop, login, logout, status)
over its webhook (`webhook.py`), credential checks (`connection.py`) and sending
(`sending.py`)."""

from __future__ import annotations

from typing import Any

from gsv_core.channels.accounts import start_command
from gsv_core.channels.base import Capabilities
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.whatsapp.account import Account
from gsv_core.channels.whatsapp.account import load_settings
from gsv_core.channels.whatsapp.account import setting_prefix
from gsv_core.channels.whatsapp.formatting import MAX_TEXT
from gsv_core.channels.whatsapp.sending import WhatsAppSending
from gsv_core.channels.whatsapp.webhook import WhatsAppWebhook

WEBHOOK_PATH = "/channels/whatsapp/webhook"


class WhatsAppChannel(WhatsAppSending, WhatsAppWebhook):
    """WhatsApp Business phone numbers (one per account id), over webhooks."""

    name = "whatsapp"
    capabilities = Capabilities(chat_types=("dm",), media=True, typing=False, max_text=MAX_TEXT)

    def __init__(self, *, max_backoff: float = 300.0, **options: Any) -> None:
        super().__init__(max_backoff=max_backoff, **options)

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Check the token and phone number id; then webhooks for the number are taken.
        An unreachable Graph API is not fatal: the account keeps checking."""
        import httpx

        settings = load_settings(config, account_id)
        await self.stop(account_id)
        status = self._new_status(account_id, "webhook", webhookPath=WEBHOOK_PATH)
        client = httpx.AsyncClient(
            base_url=settings.api_base + "/",
            headers={"Authorization": f"Bearer {settings.access_token}"},
            timeout=30,
        )
        account = Account(status, sink, settings, client)
        checked = await self._admit(account, self._check(account), client.aclose)
        if not checked:
            self._recheck_later(account)

    async def _close(self, account: Account) -> None:
        await account.client.aclose()

    def _connected_as(self, account: Account) -> str:
        number = account.status.extra.get("displayPhoneNumber", "its number")
        return f"WhatsApp Business number {number} is connected."

    def _setup(self, account_id: str) -> tuple[str, list[str]]:
        key = setting_prefix(account_id)
        intro = "WhatsApp has no QR login here: gsv uses the official WhatsApp Business Cloud API."
        return intro, [
            "At https://developers.facebook.com/apps create an app (type Business) and add "
            "the WhatsApp product.",
            "WhatsApp > API Setup: note the Phone number ID of your business number.",
            "Business Settings > System users: add one, give it the app, and generate a "
            "permanent token with whatsapp_business_messaging and whatsapp_business_management.",
            "App settings > Basic: copy the App secret.",
            f"gsv config set {key}.accessToken <permanent token>\n"
            f"   gsv config set {key}.phoneNumberId <phone number id>\n"
            f"   gsv config set {key}.appSecret <app secret>\n"
            f"   gsv config set {key}.verifyToken <a long random string you choose>",
            start_command(self.name, account_id),
            "WhatsApp > Configuration > Webhook: callback URL "
            f"https://<your gateway>{WEBHOOK_PATH} (public HTTPS, e.g. a reverse proxy or "
            "tunnel to the gateway port), the same verify token; subscribe to `messages`.",
        ]
