"""The Telegram adapter: bot accounts over the Bot API with python-telegram-bot's `Bot`,
long polling in a task this package owns (one per account, cancelled by `stop`).

- `account`: settings from config, per-account state, token masking, Bot API errors
- `connection`: getMe, long polling, handing updates and button presses to the sink
- `sending`: text (split, HTML with a plain fallback), edits, inline keyboards, typing
- `conversion`: Telegram messages as peers, senders, mentions and downloaded Media
- `formatting`: agent Markdown as Telegram HTML, split under the length limit
- `channel`: `TelegramChannel`, the surface the channel manager uses

Buttons are an inline keyboard under the message; a press arrives as a `callback_query`
update, goes to `sink.action()`, and is answered with `answerCallbackQuery` carrying the
sink's answer.

python-telegram-bot is imported when an account starts, not with this package.
"""

import os

# PTB 22 warns on every time-period attribute (RetryAfter.retry_after, Voice.duration)
# unless its v23 behaviour (timedelta values) is chosen; choose it, and accept both types.
os.environ.setdefault("PTB_TIMEDELTA", "true")

from gsv_core.channels.telegram.account import TOKEN_REJECTED
from gsv_core.channels.telegram.account import mask
from gsv_core.channels.telegram.channel import TelegramChannel

__all__ = ["TOKEN_REJECTED", "TelegramChannel", "mask"]
