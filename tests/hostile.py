"""Hostile text, as a stranger, a tool or a model could send it, and how gsv must show it:
rich markup shown literally, terminal control characters as visible stand-ins."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Hostile:
    name: str
    written: str  # what arrives
    shown: str  # what a person must see

    @property
    def path_safe(self) -> bool:
        """Usable as a workspace file name (the gateway refuses C0 controls and `/`)."""
        return RAW_C0.search(self.written) is None and "/" not in self.written


HOSTILE = (
    Hostile("close-tag", "[/]", "[/]"),
    Hostile("open-tag", "[bold]x", "[bold]x"),
    Hostile("link-markup", "[link=https://evil.example]click[/link]",
            "[link=https://evil.example]click[/link]"),
    Hostile("emoji-code", ":smile: [red]", ":smile: [red]"),
    Hostile("csi-colour", "\x1b[31mred", "␛[31mred"),
    Hostile("osc8-hyperlink", "\x1b]8;;http://evil\x07x\x1b]8;;\x07", "␛]8;;http://evil␇x␛]8;;␇"),
    Hostile("osc52-clipboard", "\x1b]52;c;ZXZpbA==\x07", "␛]52;c;ZXZpbA==␇"),
    Hostile("c1-csi", "\x9b31m", "\\x9b31m"),
    Hostile("carriage-return", "safe\rEVIL", "safe␍EVIL"),
)  # fmt: skip
# a lone surrogate cannot cross the wire (UTF-8 frames) nor be stored (SQLite refuses it);
# it reaches the screen from local sources and is tested where it can arrive
SURROGATE = Hostile("lone-surrogate", "a\ud800b", "a\\ud800b")

RAW_C0 = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
# what must never reach a terminal: ESC, BEL, CR and every other C0/C1 control, surrogates
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
