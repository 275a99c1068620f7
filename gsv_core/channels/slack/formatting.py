"""Text between the agent and Slack: agent Markdown -> Slack `mrkdwn` for replies, and
Slack's message markup -> plain text for what the agent reads.

mrkdwn differs from Markdown: `*bold*`, `_italic_`, `~strike~`, links `<url|label>`, no
headings and no list syntax; `&`, `<` and `>` must be escaped everywhere (Slack reads
`<...>` as its own markup). Code spans and fenced blocks keep their backticks; a fence's
language tag would show as a first line, so it is dropped.
"""

from __future__ import annotations

import re

from gsv_core.channels.markdown import BOLD
from gsv_core.channels.markdown import BULLET
from gsv_core.channels.markdown import CODE_SPAN
from gsv_core.channels.markdown import HEADING
from gsv_core.channels.markdown import ITALIC
from gsv_core.channels.markdown import PLACEHOLDER
from gsv_core.channels.markdown import QUOTE
from gsv_core.channels.markdown import STRIKE

MAX_TEXT = 4000  # Slack truncates at 40,000; 4,000 is its advice for readable messages

_FENCE = re.compile(r"^ {0,3}```[ \t]*[\w+#.-]*[ \t]*\n(.*?)(?:^ {0,3}```[ \t]*$|\Z)", re.M | re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|mailto:)[^)\s]+)\)")
_BOLD_MARK = "\x01"  # stands for `*` until italics are done, so `**b**` never turns `_b_`

# inbound markup: <@U123>, <@U123|name>, <#C123|general>, <!here>, <url|label>, <url>
_SLACK_TOKEN = re.compile(r"<([@#!]?)([^<>|]+)(?:\|([^<>]*))?>")


def to_mrkdwn(markdown: str) -> str:
    """Slack mrkdwn for an agent's Markdown reply."""
    markdown = markdown.replace("\x00", "").replace(_BOLD_MARK, "")
    parts: list[str] = []
    pos = 0
    for fence in _FENCE.finditer(markdown):
        parts.append(_blocks(markdown[pos : fence.start()]))
        parts.append(f"```\n{_escape(fence.group(1).removesuffix(chr(10)))}\n```")
        pos = fence.end()
    parts.append(_blocks(markdown[pos:]))
    return "".join(parts)


def _blocks(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        heading = HEADING.match(line)
        bullet = BULLET.match(line)
        quote = QUOTE.match(line)
        if heading:
            lines.append(f"*{_inline(heading.group(1)).strip('*')}*")
        elif bullet:
            lines.append(f"{bullet.group(1)}• {_inline(bullet.group(2))}")
        elif quote:
            lines.append(f"> {_inline(quote.group(1))}")
        else:
            lines.append(_inline(line))
    return "\n".join(lines)


def _inline(text: str) -> str:
    stash: list[str] = []

    def keep(piece: str) -> str:
        stash.append(piece)
        return f"\x00{len(stash) - 1}\x00"

    text = CODE_SPAN.sub(lambda m: keep(f"`{_escape(m.group(2))}`"), text)
    text = _LINK.sub(lambda m: keep(f"<{_escape(m.group(2))}|{_label(m.group(1))}>"), text)
    text = _escape(text)
    text = BOLD.sub(rf"{_BOLD_MARK}\1{_BOLD_MARK}", text)
    text = ITALIC.sub(r"_\1_", text)
    text = STRIKE.sub(r"~\1~", text).replace(_BOLD_MARK, "*")
    while PLACEHOLDER.search(text):  # a link label may hold a code-span placeholder
        text = PLACEHOLDER.sub(lambda m: stash[int(m.group(1))], text)
    return text


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _label(text: str) -> str:
    # `|` and `>` would end the label early
    return _escape(text).replace("|", "\u2758")


def to_plain(text: str, names: dict[str, str] | None = None) -> str:
    """What the agent reads for a Slack message: mentions as `@name` (from `names`, user
    id -> name), channels as `#name`, links as `label (url)`, entities decoded."""
    names = names or {}

    def token(match: re.Match[str]) -> str:
        sigil, target, label = match.groups()
        if sigil == "@":
            return f"@{names.get(target) or label or target}"
        if sigil == "#":
            return f"#{label or target}"
        if sigil == "!":
            return f"@{(label or target).split('^')[0]}"
        return f"{label} ({target})" if label and label != target else target

    plain = _SLACK_TOKEN.sub(token, text)
    return plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def mentioned_ids(text: str) -> tuple[str, ...]:
    """User ids mentioned in a Slack message (`<@U123>`), in order, without repeats."""
    found = [m.group(2) for m in _SLACK_TOKEN.finditer(text) if m.group(1) == "@"]
    return tuple(dict.fromkeys(found))
