"""The original's 400 messages for bad params (docs/protocol.md#error-codes).

Clients written for the original show these texts, and some match on them, so a method
listed here answers a missing, empty or wrongly typed field with the original's exact
message; the field details stay in `details.errors`. Every other validation failure
(and every method not listed) gets gsv's own message naming the fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gsv_core.protocol import methods as m


@dataclass(frozen=True)
class ParamMessage:
    """The message for failures of `fields`; `any_error` also covers bad values (else only
    a field that is absent, null, empty or of the wrong type)."""

    message: str
    fields: frozenset[str]
    any_error: bool = False


def _absent(message: str, *fields: str) -> ParamMessage:
    return ParamMessage(message, frozenset(fields))


_SESSION_KEY = _absent("sessionKey required", "sessionKey")
_CALL_ID = _absent("callId required", "callId")
_TRANSFER_ID = _absent("transferId required", "transferId")

PARAM_MESSAGES: Final[dict[str, ParamMessage]] = {
    m.CHAT_SEND: _absent("sessionKey and message required", "sessionKey", "message"),
    m.CONFIG_SET: _absent("path required", "path"),
    m.TOOL_INVOKE: _absent("tool required", "tool"),
    m.TOOL_RESULT: _CALL_ID,
    m.LOGS_RESULT: _CALL_ID,
    m.LOGS_GET: ParamMessage("lines must be a positive number", frozenset({"lines"}), True),
    **dict.fromkeys(
        (
            m.SESSION_GET,
            m.SESSION_STATS,
            m.SESSION_PATCH,
            m.SESSION_RESET,
            m.SESSION_COMPACT,
            m.SESSION_HISTORY,
            m.SESSION_PREVIEW,
        ),
        _SESSION_KEY,
    ),
    m.CHANNEL_INBOUND: _absent(
        "channel, accountId, peer, and message required", "channel", "accountId", "peer", "message"
    ),
    m.CRON_ADD: _absent("name, schedule, and spec are required", "name", "schedule", "spec"),
    m.CRON_UPDATE: _absent("id and patch are required", "id", "patch"),
    m.CRON_REMOVE: _absent("id is required", "id"),
    **dict.fromkeys(
        (m.TRANSFER_META, m.TRANSFER_ACCEPT, m.TRANSFER_COMPLETE, m.TRANSFER_DONE), _TRANSFER_ID
    ),
}
