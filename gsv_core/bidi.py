"""Unicode's direction controls: invisible characters that change the order in which the
text after them is shown (after U+202E, `rm -rf ~/ #txt.cod` can read as something else;
"exe.txt" reads "txt.exe"). Bash treats them as ordinary characters of a word, so what a
person approves must show them, never obey them: an approval summary writes each as
`\\u202e`, the shell reader doubts a line holding one, and the CLI and TUI show them as
escapes wherever they print text from elsewhere (gsv_cli/safe_text.py)."""

from __future__ import annotations

import re

# a regular expression's character-class body: ALM, LRM, RLM, the embeddings and
# overrides (LRE RLE PDF LRO RLO) and the isolates (LRI RLI FSI PDI)
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def has_bidi(text: str) -> bool:
    return _BIDI.search(text) is not None


def escape_bidi(text: str) -> str:
    """`text` with each direction control written as its escape (`\\u202e`)."""
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
