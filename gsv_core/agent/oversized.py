"""A message too big for the model's context window: a pasted 1 MB log, a generated 1 MB
command in a tool call, a huge tool result. It is cut before it is sent, every time it is
sent (to the model and to the summariser), to a head-and-tail excerpt with a note saying
how much was cut and why, so it costs its size once: the stored history keeps it whole
(the transcript, the archive and search have all of it), only what reaches a model is
bounded.

Why cut rather than refuse a user message that alone exceeds the window: the message is
already stored and acknowledged when its run finds out which model answers it (a
`/model` directive, a fallback, a session's own model may each have another window), a
channel's sender cannot easily send it again, and the head and tail of a log are usually
what the question is about. The user hears of the cut once, in a `session.notice` of kind
`cut` (docs/models.md#oversized-messages).
"""

from __future__ import annotations

from typing import Any

from gsv_core.agent.compaction import CHARS_PER_TOKEN
from gsv_core.agent.compaction import estimate_capped
from gsv_core.agent.compaction import estimate_text_length
from gsv_core.agent.compaction import text_parts
from gsv_core.protocol.excerpt import cut_strings
from gsv_core.protocol.excerpt import strings_length
from gsv_core.protocol.messages import text_of

# one message may take at most this share of what the window leaves after the reserve:
# the rest of the conversation and the answer need the other half
MESSAGE_SHARE = 0.5
# after the provider said a request overflowed all the same (its tokenizer counts a dense
# text, code or CJK, as more tokens than our estimate): a quarter of that, for the run
TIGHTER = 4
MIN_MESSAGE_TOKENS = 1_000
FAR_BELOW = 500  # tokens of JSON structure a message is allowed beyond twice its text


def message_limit(window: int, reserve: int, tighter: bool = False) -> int:
    """The most tokens one message may take in a request to a model with `window`
    (`tighter`: after an overflow the estimate did not foresee)."""
    limit = max(MIN_MESSAGE_TOKENS, int((window - reserve) * MESSAGE_SHARE))
    return limit // TIGHTER if tighter else limit


def why(window: int) -> str:
    """The reason the cut note gives the model."""
    return f"too long for the model's context window of {window:,} tokens"


def fit(message: dict[str, Any], limit: int, reason: str) -> tuple[dict[str, Any], int]:
    """`message` cut to about `limit` tokens, and how many characters were cut (0: the
    message itself, it fits). Only text and tool-call arguments are cut; the JSON of the
    arguments stays valid (each long string value becomes an excerpt) and thinking
    blocks, whose signatures the provider checks, are left whole."""
    parts = text_parts(message)
    text_tokens = estimate_text_length(strings_length(parts))
    # far below the limit (its JSON at most about twice its text): no encoding, since
    # every message of every request passes here
    if 2 * text_tokens + FAR_BELOW <= limit or estimate_capped(message, limit + 1) <= limit:
        return message, 0
    budget = int(limit * CHARS_PER_TOKEN)
    content = message.get("content")
    shorter_parts, cut = cut_strings(parts, budget, reason)
    if not cut:
        return message, 0
    if not isinstance(content, list):  # string content: its one part
        return {**message, "content": shorter_parts[0]}, cut
    blocks = [_with(block, part) for block, part in zip(content, shorter_parts, strict=True)]
    return {**message, "content": blocks}, cut


def _with(block: Any, part: Any) -> Any:
    if part is None or not isinstance(block, dict):
        return block
    key = "text" if block.get("type") == "text" else "arguments"
    return block if block.get(key) is part else {**block, key: part}


def notice_text(original: dict[str, Any], cut: int, window: int) -> str:
    """The `session.notice` a user reads when their own message was cut for the model."""
    size = len(text_of(original))
    return (
        f"Your message is {size:,} characters, too long for the model's context window "
        f"({window:,} tokens): the model was sent its beginning and its end, with a note "
        f"saying that {cut:,} characters in the middle were cut. The whole message stays "
        "in the session's history."
    )
