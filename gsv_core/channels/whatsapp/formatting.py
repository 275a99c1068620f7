"""Agent Markdown as WhatsApp formatting (*bold*, _italic_, ~strike~, ``` blocks)."""

from __future__ import annotations

import re

from gsv_core.channels.markdown import BOLD
from gsv_core.channels.markdown import ITALIC
from gsv_core.channels.markdown import STRIKE

MAX_TEXT = 4096

_CODE = re.compile(r"(```.*?```|`[^`\n]+`)", re.S)
_WA_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|mailto:)[^)\s]+)\)")
_WA_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def to_whatsapp(markdown: str) -> str:
    """WhatsApp's formatting for an agent's Markdown reply; code is left as it is."""
    parts = _CODE.split(markdown.replace("\x01", ""))
    for index in range(0, len(parts), 2):  # even parts are outside code
        text = _WA_LINK.sub(r"\1 (\2)", parts[index])
        text = _WA_HEADING.sub("\x01\\1\x01", text)
        text = BOLD.sub("\x01\\1\x01", text)  # \x01 stands for `*` until italics are done
        text = ITALIC.sub(r"_\1_", text)
        parts[index] = STRIKE.sub(r"~\1~", text).replace("\x01", "*")
    return "".join(parts)
