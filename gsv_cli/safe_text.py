"""Text from elsewhere (the gateway, the agent, tools, strangers on a channel, files) made
safe to show in a terminal, the CLI's and the TUI's alike.

Two dangers, one module:

* rich markup: a plain `str` given to rich (a table cell, `console.print`) is parsed, so
  `[/]` crashes with MarkupError and `[link=...]` makes a hidden hyperlink. `plain_text()`
  builds a `rich.text.Text`, which is never parsed (nor are `:emoji:` codes replaced).
* terminal control: ESC starts CSI/OSC/DCS sequences (colours, cursor moves, OSC 8 links,
  OSC 52 clipboard writes), C1 codes do the same in one character (U+009B is CSI), `\\r`
  overwrites a line, and a lone surrogate cannot be encoded at all (UnicodeEncodeError).
  `neutralise()` replaces each such character with a visible stand-in, so the text is
  shown as written and nothing in it is obeyed.

`plain_content()` is the same for Textual widgets. rich and Textual are imported only when
something is shown (`gsv --help` stays fast).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gsv_core.bidi import BIDI_CONTROLS

if TYPE_CHECKING:
    from rich.text import Text
    from textual.content import Content

# C0 controls except \t and \n, DEL, C1 controls, surrogates, Unicode's direction
# controls (they reorder what follows: gsv_core/bidi.py); CRLF is one line break
_UNSAFE = re.compile(f"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff{BIDI_CONTROLS}]")
# what json.dumps(ensure_ascii=False) leaves raw but a terminal (or encoder) would not take
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f\ud800-\udfff{BIDI_CONTROLS}]")
CONTROL_PICTURES = 0x2400  # U+2400..U+241F picture C0 controls: ␀ .. ␛ (ESC) .. ␟
DEL_PICTURE = "\u2421"  # ␡


def neutralise(text: str) -> str:
    """`text` with every control character shown instead of obeyed: C0 as its control
    picture (ESC -> ␛, BEL -> ␇, CR -> ␍), C1 as `\\x9b`, a lone surrogate as `\\ud800`.
    Tabs and line breaks stay (CRLF becomes one line break)."""
    return _UNSAFE.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    if code < 0x20:
        return chr(CONTROL_PICTURES + code)
    if code == 0x7F:
        return DEL_PICTURE
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def plain_text(value: object, style: str = "") -> Text:
    """`value` as a rich Text: shown literally (no markup, no emoji codes), neutralised."""
    from rich.text import Text  # rich is imported only when something prints

    return Text(neutralise(str(value)), style=style)


def escape_json(dumped: str) -> str:
    """JSON text with the characters json.dumps(ensure_ascii=False) leaves raw but a
    terminal would obey (DEL, C1, direction controls) or cannot encode (lone surrogates)
    written as `\\uXXXX`
    escapes: the same JSON value, safe to print. They only occur inside strings, where an
    escape means the same character."""
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", dumped)


def plain_content(value: object) -> Content:
    """`value` as Textual Content for a widget: never parsed as markup, neutralised
    (Textual drops BEL and CR itself but passes ESC and C1 codes on)."""
    from textual.content import Content

    return Content(neutralise(str(value)))
