"""Agent Markdown -> Telegram HTML (`parse_mode="HTML"`), and the splitter that keeps one
message under Telegram's length limit.

Telegram's HTML mode accepts a small tag set (b, i, s, code, pre, a, blockquote, ...) and
rejects the whole message on any stray `<`, `>` or `&`, so everything that is not markup
we generate is escaped. Emphasis patterns never match across a tag, which keeps the output
well nested; a final balance check falls back to escaping-only output if a pattern ever
slips. Whatever Telegram still refuses, the adapter resends as plain text.

Telegram counts the limit (4,096) in UTF-16 code units of the visible text, after entity
parsing. The conversion never makes the visible text longer than the Markdown it came
from, so splitting the Markdown is enough.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape

from gsv_core.channels.markdown import BOLD
from gsv_core.channels.markdown import BULLET
from gsv_core.channels.markdown import CODE_SPAN
from gsv_core.channels.markdown import HEADING
from gsv_core.channels.markdown import PLACEHOLDER
from gsv_core.channels.markdown import QUOTE

MAX_TEXT = 4096

_FENCE = re.compile(
    r"^ {0,3}```[ \t]*([\w+#.-]*)[ \t]*\n(.*?)(?:^ {0,3}```[ \t]*$|\Z)", re.M | re.S
)
_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|tg://|mailto:)[^)\s]+)\)")
_TAG = re.compile(r"<(/?)([a-z-]+)[^>]*>")

# Applied in order to escaped text. Bold goes first so its body holds no tags; the others
# refuse a `<` or `>` in their body, so no two tags can ever cross. `__x__` is not bold:
# agents write Python dunders like `__init__` in prose far more often than they mean it.
_EMPHASIS: tuple[tuple[re.Pattern[str], str], ...] = (
    (BOLD, "b"),
    (re.compile(r"(?<![\w*])\*(?![\s*])([^*<>\n]+?)(?<![\s*])\*(?![\w*])"), "i"),
    (re.compile(r"(?<![\w_])_(?![\s_])([^_<>\n]+?)(?<![\s_])_(?![\w_])"), "i"),
    (re.compile(r"~~(?!\s)([^<>\n]+?)(?<!\s)~~"), "s"),
)


def format_html(markdown: str) -> str:
    """Telegram-safe HTML for an agent's Markdown reply."""
    markdown = markdown.replace("\x00", "")
    html = _convert(markdown, emphasis=True)
    return html if _balanced(html) else _convert(markdown, emphasis=False)


def utf16_len(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def split_text(text: str, limit: int = MAX_TEXT) -> list[str]:
    """Cut `text` into chunks of at most `limit` UTF-16 units, preferring paragraph, then
    line, then word boundaries. Blank chunks are dropped."""
    chunks: list[str] = []
    while utf16_len(text) > limit:
        cut = _cut_point(text, limit)
        chunks.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    chunks.append(text)
    return [chunk for chunk in chunks if chunk.strip()]


def _cut_point(text: str, limit: int) -> int:
    end = _fit(text, limit)
    window = text[:end]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at > end // 2:
            return at + len(separator)
    return end


def _fit(text: str, limit: int) -> int:
    """How many leading characters fit in `limit` UTF-16 units (at least one)."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            return max(index, 1)
    return len(text)


def _convert(markdown: str, *, emphasis: bool) -> str:
    parts: list[str] = []
    pos = 0
    for fence in _FENCE.finditer(markdown):
        parts.append(_blocks(markdown[pos : fence.start()], emphasis))
        parts.append(_pre(fence.group(1), fence.group(2)))
        pos = fence.end()
    parts.append(_blocks(markdown[pos:], emphasis))
    return "".join(parts)


def _pre(language: str, code: str) -> str:
    code = escape(code.removesuffix("\n"), quote=False)
    if language:
        return f'<pre><code class="language-{escape(language)}">{code}</code></pre>'
    return f"<pre>{code}</pre>"


def _blocks(text: str, emphasis: bool) -> str:
    """Line-level Markdown: headings, bullets and blockquotes; inline markup per line."""
    out: list[str] = []
    quoted: list[str] = []
    for line in text.split("\n"):
        quote = QUOTE.match(line)
        if quote:
            quoted.append(_inline(quote.group(1), emphasis))
            continue
        if quoted:
            out.append(f"<blockquote>{chr(10).join(quoted)}</blockquote>")
            quoted = []
        out.append(_line(line, emphasis))
    if quoted:
        out.append(f"<blockquote>{chr(10).join(quoted)}</blockquote>")
    return "\n".join(out)


def _line(line: str, emphasis: bool) -> str:
    heading = HEADING.match(line)
    if heading:
        return f"<b>{_inline(heading.group(1), emphasis)}</b>"
    bullet = BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_inline(bullet.group(2), emphasis)}"
    return _inline(line, emphasis)


def _inline(text: str, emphasis: bool) -> str:
    stash: list[str] = []

    def keep(html: str) -> str:
        stash.append(html)
        return f"\x00{len(stash) - 1}\x00"

    text = CODE_SPAN.sub(lambda m: keep(f"<code>{escape(m.group(2), quote=False)}</code>"), text)
    text = _LINK.sub(lambda m: keep(_anchor(m.group(1), m.group(2))), text)
    text = escape(text, quote=False)
    if emphasis:
        for pattern, tag in _EMPHASIS:
            text = pattern.sub(rf"<{tag}>\1</{tag}>", text)
    return _restore(text, stash.__getitem__)


def _anchor(label: str, url: str) -> str:
    return f'<a href="{escape(url, quote=True)}">{escape(label, quote=False)}</a>'


def _restore(text: str, lookup: Callable[[int], str]) -> str:
    # a link label may itself hold a code-span placeholder, hence the loop
    while PLACEHOLDER.search(text):
        text = PLACEHOLDER.sub(lambda m: lookup(int(m.group(1))), text)
    return text


def _balanced(html: str) -> bool:
    stack: list[str] = []
    for tag in _TAG.finditer(html):
        closing, name = tag.group(1), tag.group(2)
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack
