"""Inline directives: per-message settings written into the message itself.

    /think:high  /thinking:low  /t:3        reasoning level for this message
    /model:provider/id  /m:model-id         model for this message
    /status                                 stripped, no other effect

A directive is a token preceded by the start or whitespace and followed by whitespace or the
end, matched case-insensitively; only the first of each kind counts. Found directives are
cut out of the message. An invalid level is ignored silently; an invalid model selector is
reported in the acknowledgement.

A bare model id needs a provider: `parse_directives(text, None)` reports it as invalid and
`Directives.needs_fallback_provider` says so; the caller then parses again with the
session's provider.

Deliberate difference from the original: only the spaces around a removed directive are
collapsed, so the line breaks and indentation of the rest of the message survive (the
original collapsed every run of whitespace in the whole message, flattening code blocks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gsv_core.agent.levels import MODEL_SELECTOR_HELP
from gsv_core.agent.levels import ModelRef
from gsv_core.agent.levels import normalize_think_level
from gsv_core.agent.levels import parse_model_selector

# /(?<!\S/): a slash at the start or after whitespace (the lookbehind, after the slash,
# sees the character before it); (?!\S): at the end or before whitespace. Starting with
# the literal slash lets the engine skip to each slash: a pasted 1 MB log is scanned in
# a millisecond, not in 70
_THINK = re.compile(r"/(?<!\S/)(?:thinking|think|t)(?::(\S+))?(?!\S)", re.IGNORECASE)
_MODEL = re.compile(r"/(?<!\S/)(?:model|m)(?::(\S+))?(?!\S)", re.IGNORECASE)
_STATUS = re.compile(r"/(?<!\S/)status(?!\S)", re.IGNORECASE)
_SPACES_BEFORE = re.compile(r"[^\S\r\n]+$")
_SPACES_AFTER = re.compile(r"^[^\S\r\n]+")


@dataclass(frozen=True)
class Directives:
    """What a message asked for inline, and the message without the directives."""

    cleaned: str
    think_level: str | None = None
    model: ModelRef | None = None
    invalid_model_raw: str | None = None  # the value of a model directive that did not parse
    has_status: bool = False
    had_any: bool = False

    @property
    def needs_fallback_provider(self) -> bool:
        """A bare model id was given without a provider to put it on: parse again with one."""
        raw = self.invalid_model_raw
        return raw is not None and "/" not in raw and not any(c.isspace() for c in raw)

    def to_result(self) -> dict[str, Any] | None:
        """The `directives` of a chat.send result: `{thinkLevel?, model?}`, None if neither."""
        result: dict[str, Any] = {}
        if self.think_level is not None:
            result["thinkLevel"] = self.think_level
        if self.model is not None:
            result["model"] = {"provider": self.model.provider, "id": self.model.id}
        return result or None


def parse_directives(text: str, fallback_provider: str | None = None) -> Directives:
    """The directives in a message; a bare model id lands on `fallback_provider`."""
    think = _THINK.search(text)
    model = _MODEL.search(text)
    status = _STATUS.search(text)
    found = [m for m in (think, model, status) if m is not None]
    model_raw = model.group(1) if model is not None else None
    selected = parse_model_selector(model_raw, fallback_provider) if model_raw else None
    return Directives(
        cleaned=_remove(text, found),
        think_level=normalize_think_level(think.group(1)) if think is not None else None,
        model=selected,
        invalid_model_raw=model_raw if model_raw and selected is None else None,
        has_status=status is not None,
        had_any=bool(found),
    )


def _remove(text: str, found: list[re.Match[str]]) -> str:
    """The text without the matched spans; the spaces around each span become one space,
    or none at the edge of the text or of a line."""
    # right to left, so the spans still to cut keep their offsets
    for match in sorted(found, key=lambda m: m.start(), reverse=True):
        before = _SPACES_BEFORE.sub("", text[: match.start()])
        after = _SPACES_AFTER.sub("", text[match.end() :])
        at_line_edge = before.endswith(("\n", "\r")) or after.startswith(("\n", "\r"))
        text = before + (" " if before and after and not at_line_edge else "") + after
    return text.strip()


def is_directive_only(directives: Directives) -> bool:
    """The message held directives and nothing else: no agent turn is needed."""
    return directives.had_any and not directives.cleaned


def directive_ack(directives: Directives) -> str | None:
    """The acknowledgement of a directive-only message, e.g. `_Thinking: high | Model: a/b_`;
    None when there is nothing to acknowledge."""
    parts = []
    if directives.think_level is not None:
        parts.append(f"Thinking: {directives.think_level}")
    if directives.model is not None:
        parts.append(f"Model: {directives.model}")
    elif directives.invalid_model_raw is not None:
        parts.append(
            f"Invalid model selector: {directives.invalid_model_raw} ({MODEL_SELECTOR_HELP})"
        )
    return f"_{' | '.join(parts)}_" if parts else None
