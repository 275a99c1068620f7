"""The Slack adapter: one Slack app per account, receiving over Socket Mode and sending
with the Web API (slack-sdk's `AsyncWebClient`).

- `account`: the two tokens from config, per-account state, Web API errors
- `connection`: auth.test, Socket Mode sockets, envelopes and button presses to the sink
- `sending`: mrkdwn text, Block Kit buttons, edits
- `conversion`: frames, conversation kinds and peers, downloaded files
- `formatting`: agent Markdown as Slack mrkdwn, Slack text as plain text, mentions
- `channel`: `SlackChannel`, the surface the channel manager uses

Buttons are Block Kit: the text in section blocks and an actions block under it; they
need Interactivity turned on for the app.

slack_sdk, websockets and httpx are imported when an account starts, not with this package.
"""

from gsv_core.channels.slack.channel import SlackChannel

__all__ = ["SlackChannel"]
