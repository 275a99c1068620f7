"""`SlackChannel`: the Slack adapter's surface (start, stop, login, logout, status) over
its connection (`connection.py`) and sending (`sending.py`) halves."""

from __future__ import annotations

from typing import Any

from gsv_core.channels.accounts import start_command
from gsv_core.channels.base import ALL_CHAT_TYPES
from gsv_core.channels.base import Capabilities
from gsv_core.channels.base import ChannelSink
from gsv_core.channels.slack.account import Account
from gsv_core.channels.slack.account import close_web
from gsv_core.channels.slack.account import load_settings
from gsv_core.channels.slack.account import setting_key
from gsv_core.channels.slack.account import web_client
from gsv_core.channels.slack.connection import SlackSocket
from gsv_core.channels.slack.formatting import MAX_TEXT
from gsv_core.channels.slack.sending import SlackSending


class SlackChannel(SlackSending, SlackSocket):
    """Slack apps (one per account id) over Socket Mode."""

    name = "slack"
    capabilities = Capabilities(
        ALL_CHAT_TYPES, media=True, threads=True, typing=False, buttons=True, max_text=MAX_TEXT
    )

    def __init__(self, *, max_backoff: float = 60.0, **options: Any) -> None:
        super().__init__(max_backoff=max_backoff, **options)

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        """Check both tokens (auth.test, apps.connections.open), then keep the socket open
        in the background. Unreachable Slack is not fatal: the account keeps trying."""
        settings = load_settings(config, account_id)
        await self.stop(account_id)
        status = self._new_status(account_id, "socket")
        web = web_client(settings)
        account = Account(status, sink, settings, web)
        # a refused token raises here: _admit closes the client first
        url = await self._admit(account, self._connect(account), lambda: close_web(web))
        self._spawn(account, self._run(account, url))

    async def _close(self, account: Account) -> None:
        await close_web(account.web)

    def _connected_as(self, account: Account) -> str:
        team = account.status.extra.get("team", "its workspace")
        return f"Slack app @{account.bot_name} is connected to {team}."

    def _setup(self, account_id: str) -> tuple[str, list[str]]:
        return "Slack has no QR login: the app connects with two tokens over Socket Mode.", [
            "Create an app at https://api.slack.com/apps (From scratch) in your workspace.",
            "Socket Mode: turn it on and create an app-level token with the "
            "connections:write scope (xapp-...).",
            "OAuth & Permissions, Bot Token Scopes: app_mentions:read, chat:write, "
            "im:history, channels:history, groups:history, mpim:history, files:read, "
            "users:read.",
            "Event Subscriptions: on; bot events message.im, message.channels, "
            "message.groups, message.mpim, app_mention. Interactivity & Shortcuts: on "
            "(for the Allow / Deny buttons of approvals).",
            "App Home: allow users to send messages from the Messages tab.",
            "Install the app to the workspace and copy the Bot User OAuth Token (xoxb-...).",
            f"gsv config set {setting_key(account_id, 'appToken')} xapp-...\n"
            f"   gsv config set {setting_key(account_id, 'botToken')} xoxb-...",
            f"{start_command(self.name, account_id)}   "
            "(then invite the app to a channel with /invite @yourapp)",
        ]
