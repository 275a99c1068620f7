"""The Discord adapter: bot accounts over Discord's gateway, through the `DiscordGateway`
seam (`seam.py`; the real one wraps discord.py's Client), one per account.

- `account`: the bot token from config (masked in logs and errors), per-account state
- `connection`: running the seam with retries, messages and button presses to the sink
- `sending`: text in 2,000-character pieces, buttons, edits, typing
- `conversion`: Discord messages and presses as peers
- `seam`: the protocol the adapter needs from Discord, and its discord.py implementation
- `channel`: `DiscordChannel`, the surface the channel manager uses

Attachments are downloaded into base64 Media under a size cap; a button press goes to
`sink.action()` and its answer goes back privately to the presser. discord.py is imported
only when a `DiscordPyGateway` is built.
"""

from gsv_core.channels.discord.channel import DiscordChannel
from gsv_core.channels.discord.sending import MAX_TEXT

__all__ = ["MAX_TEXT", "DiscordChannel"]
