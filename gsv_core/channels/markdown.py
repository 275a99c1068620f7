"""The agent's Markdown as the platform formatters read it: the patterns Slack's,
Telegram's and WhatsApp's dialects share. Each formatter keeps the patterns that differ
(which link schemes it allows, what its emphasis may not contain)."""

from __future__ import annotations

import re

CODE_SPAN = re.compile(r"(`+)(?!\s*\1)(.+?)\1")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")  # one line at a time
QUOTE = re.compile(r"^>[ \t]?(.*)$")
BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(.*)$")
PLACEHOLDER = re.compile(r"\x00(\d+)\x00")  # stands for a code span set aside
# `__x__` is not bold: agents write Python dunders (`__init__`) in prose more than they mean it
BOLD = re.compile(r"\*\*(?!\s)(.+?)(?<!\s)\*\*")
ITALIC = re.compile(r"(?<![\w*])\*(?![\s*])([^*\n]+?)(?<![\s*])\*(?![\w*])")
STRIKE = re.compile(r"~~(?!\s)([^~\n]+?)(?<!\s)~~")
