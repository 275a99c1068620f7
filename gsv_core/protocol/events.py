"""Every event name (docs/protocol.md#events), and the `chat` event states."""

from __future__ import annotations

from typing import Final

CHAT: Final = "chat"
# gsv addition: a tool call of a run started or finished (docs/protocol.md)
CHAT_TOOL: Final = "chat.tool"
# gsv addition: something happened to a session the user should see (auto reset, compaction)
SESSION_NOTICE: Final = "session.notice"
TOOL_INVOKE: Final = "tool.invoke"
# gsv addition: the gateway gave up on a tool call (timeout, caller gone): stop the work
TOOL_CANCEL: Final = "tool.cancel"
# gsv addition: a tool call waits for (or got) a human's approval
TOOL_APPROVAL: Final = "tool.approval"
LOGS_GET: Final = "logs.get"
NODE_PROBE: Final = "node.probe"
TRANSFER_SEND: Final = "transfer.send"
TRANSFER_RECEIVE: Final = "transfer.receive"
TRANSFER_START: Final = "transfer.start"
TRANSFER_END: Final = "transfer.end"
# gsv addition: bytes moved so far, for the client that asked (transfer.request)
TRANSFER_PROGRESS: Final = "transfer.progress"
CHANNEL_OUTBOUND: Final = "channel.outbound"
CHANNEL_TYPING: Final = "channel.typing"
# gsv addition: a write changed the gateway config (`{path}`, never the value): another
# client's `config.set`, `/budget`, an approval's "always", ...; so a client showing a
# setting (the chat's model) loads it again
CONFIG_CHANGED: Final = "config.changed"

# a session's conversation: what `chat.subscribe` narrows to the sessions a client follows
# (approvals are not among them: the owner answers one from whatever screen is open)
CONVERSATION_EVENTS: Final[frozenset[str]] = frozenset({CHAT, CHAT_TOOL, SESSION_NOTICE})

EVENTS: Final[frozenset[str]] = frozenset(
    {
        CHAT,
        CHAT_TOOL,
        SESSION_NOTICE,
        TOOL_APPROVAL,
        TOOL_INVOKE,
        TOOL_CANCEL,
        LOGS_GET,
        NODE_PROBE,
        TRANSFER_SEND,
        TRANSFER_RECEIVE,
        TRANSFER_START,
        TRANSFER_END,
        TRANSFER_PROGRESS,
        CHANNEL_OUTBOUND,
        CHANNEL_TYPING,
        CONFIG_CHANGED,
    }
)

# `chat` event states; `paused` is the approval prompt.
CHAT_PARTIAL: Final = "partial"
CHAT_DELTA: Final = "delta"
CHAT_FINAL: Final = "final"
CHAT_ERROR: Final = "error"
CHAT_PAUSED: Final = "paused"
