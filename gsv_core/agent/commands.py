"""Slash commands: recognising `/reset`, `/compact [N]`, `/stop`, `/status`,
`/model [sel]`, `/think [lvl]` and `/help`, parsing their arguments, and the exact texts
they answer with. The session executes them; everything here is pure.

A message is a command only when the whole trimmed message is `/word` plus optional
arguments on the same line; unknown words are not commands (they go to the model as text).
Argument errors raise `CommandError`, whose message is the `error` of the chat.send result.

Improvement over the original: `format_status` shows the model the session actually uses
(its override, else the configured one), not always the global model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gsv_core.agent.levels import MODEL_SELECTOR_HELP
from gsv_core.agent.levels import THINK_LEVELS_LINE
from gsv_core.agent.levels import ModelRef
from gsv_core.agent.levels import normalize_think_level
from gsv_core.agent.levels import parse_model_selector
from gsv_core.errors import InvalidParams
from gsv_core.protocol.commands import COMMANDS
from gsv_core.protocol.commands import DEFAULT_COMPACT_KEEP
from gsv_core.usage.spend import BACKGROUND
from gsv_core.usage.spend import CALL_PLACES
from gsv_core.usage.spend import DAILY
from gsv_core.usage.spend import MONTHLY
from gsv_core.usage.spend import PERIODS
from gsv_core.usage.spend import usd

COMPACT_USAGE_ERROR = "Invalid count. Usage: /compact [N]"


class CommandError(InvalidParams):
    """A command's arguments are wrong; the message is shown to the user as is."""


_BY_SPELLING = {spelling: info.name for info in COMMANDS for spelling in info.spellings}

# `\w` limited to ASCII, as in the original; `/think:high` fails here and is a directive
_COMMAND = re.compile(r"/([A-Za-z0-9_]+)(?:\s+(.*))?")


@dataclass(frozen=True)
class ParsedCommand:
    name: str  # canonical: reset, compact, stop, status, model, think, help
    args: str  # trimmed; "" when none
    raw: str  # the trimmed message


def parse_command(text: str) -> ParsedCommand | None:
    """The command the whole message is, or None (multi-line and unknown words never are)."""
    trimmed = text.strip()
    # what cannot be a command is not split into lines (a pasted 1 MB log)
    if not trimmed.startswith("/") or len(trimmed.splitlines()) > 1:
        return None
    match = _COMMAND.fullmatch(trimmed)
    if match is None:
        return None
    name = _BY_SPELLING.get(match.group(1).lower())
    if name is None:
        return None
    return ParsedCommand(name=name, args=(match.group(2) or "").strip(), raw=trimmed)


def _help_text() -> str:
    lines = ["**Available Commands**", ""]
    for info in COMMANDS:
        spellings = " or ".join(f"`/{s}`" for s in (info.name, *info.aliases))
        usage = f" {info.usage}" if info.usage else ""
        lines.append(f"• {spellings}{usage} - {info.help}")
    lines += [
        "",
        "**Inline directives** (for one message, anywhere in it):",
        "• `/think:level` or `/t:level` - Reasoning level for this message",
        "• `/model:provider/model-id` or `/m:model-id` - Model for this message",
        "• `/status` - Stripped from the message",
        "",
        "`/think high` (a space) sets the level for the session; `/t:high text` only for this"
        " message.",
    ]
    return "\n".join(lines)


HELP_TEXT = _help_text()


def format_command_failure(error: object) -> str:
    return f"Command failed: {error}"


def format_reset(archived: int) -> str:
    return f"Session reset. Archived {archived} messages."


def parse_compact_count(args: str) -> int:
    """`/compact [N]`: N messages to keep, 20 by default; a positive integer or CommandError."""
    args = args.strip()
    if not args:
        return DEFAULT_COMPACT_KEEP
    if not re.fullmatch(r"[0-9]+", args) or int(args) < 1:
        raise CommandError(COMPACT_USAGE_ERROR)
    return int(args)


def format_compact(kept: int, trimmed: int) -> str:
    return f"Compacted session. Kept {kept} messages, archived {trimmed}."


def format_stop(run_id: str | None, cancelled: int = 0, *, channel: bool = False) -> str:
    """`/stop`'s answer; channels show the run id as code."""
    if run_id is None:
        return "No run in progress."
    shown = f"`{run_id}`" if channel else run_id
    tools = f", cancelled {cancelled} pending tool(s)" if cancelled else ""
    return f"Stopped run {shown}{tools}."


@dataclass(frozen=True)
class SessionStatus:
    """What `/status` reports; `model` is the session's effective model."""

    session_key: str
    message_count: int
    input_tokens: int
    output_tokens: int
    model: ModelRef
    thinking_level: str | None = None
    reset_mode: str | None = None


def format_status(status: SessionStatus, *, channel: bool = False) -> str:
    """`/status`: one `Name: value` line each; channels get a bold header and bullets."""
    lines = [
        f"Session: {status.session_key}",
        f"Messages: {status.message_count}",
        f"Tokens: {status.input_tokens} in / {status.output_tokens} out",
        f"Model: {status.model}",
    ]
    if status.thinking_level:
        lines.append(f"Thinking: {status.thinking_level}")
    if status.reset_mode:
        lines.append(f"Reset: {status.reset_mode}")
    if channel:
        return "\n".join(["**Session Status**", *(f"• {line}" for line in lines)])
    return "\n".join(lines)


def format_usage(session: dict[str, Any] | None, everyone: dict[str, Any]) -> str:
    """`/usage`: today's calls, tokens and spend, of this session and of all sessions."""
    return "\n".join([
        "Usage today:",
        f"This session: {_sums(session)}",
        f"All sessions: {_sums(everyone)}",
    ])  # fmt: skip


def _sums(sums: dict[str, Any] | None) -> str:
    if not sums or not sums["calls"]:
        return "no model calls"
    cost = sums["costUsd"]
    spend = "cost unknown" if cost is None else usd(cost, CALL_PLACES)
    if cost is not None and sums["unpricedCalls"]:
        spend += f" (+{sums['unpricedCalls']} calls of unpriced models)"
    cached = f", {sums['cacheRead']:,} read from cache" if sums["cacheRead"] else ""
    return (f"{sums['calls']} calls, {sums['input']:,} in / {sums['output']:,} out tokens"
            f"{cached}, {spend}")  # fmt: skip


BUDGETS = (DAILY, MONTHLY, BACKGROUND)
BUDGET_USAGE = "Usage: /budget [daily|monthly|background] [USD|off]"
BUDGET_FROM_CHANNEL = (
    "Budgets are set from the gsv CLI or the TUI (gsv config set budget.daily USD), "
    "not from a messenger."
)


def parse_budget_arg(args: str) -> tuple[str, float | None]:
    """`daily 5` -> ("daily", 5.0); `background off` -> ("background", None)."""
    parts = args.split()
    if len(parts) != 2 or parts[0] not in BUDGETS:
        raise CommandError(BUDGET_USAGE)
    if parts[1] == "off":
        return parts[0], None
    try:
        usd = float(parts[1].removeprefix("$"))
    except ValueError:
        raise CommandError(f"Not an amount in USD: {parts[1]}. {BUDGET_USAGE}") from None
    if not 0 <= usd < 1e9 or usd != usd:  # no negatives, NaN or absurd caps
        raise CommandError(f"A budget is 0 or more USD. {BUDGET_USAGE}")
    return parts[0], usd


def format_budget(status: dict[str, Any]) -> str:
    """`/budget`: each budget with its limit and what was spent against it."""
    lines = ["Budgets (USD):"]
    for name in BUDGETS:
        limit, spent = status["limits"][name], status["spent"][name]
        cap = "no limit" if limit is None else f"limit {usd(limit)}"
        mark = " (reached)" if name in status["reached"] else ""
        lines.append(f"{name}: {cap}, {usd(spent, CALL_PLACES)} spent {PERIODS[name]}{mark}")
    return "\n".join(lines)


def format_current_model(model: ModelRef) -> str:
    return f"Current model: {model}\n{MODEL_SELECTOR_HELP}"


def parse_model_arg(args: str, current: ModelRef) -> ModelRef:
    """`/model SEL`: the selector, a bare id staying on the current model's provider."""
    model = parse_model_selector(args, current.provider)
    if model is None:
        raise CommandError(f"Invalid model selector: {args}\n{MODEL_SELECTOR_HELP}")
    return model


def format_model_set(model: ModelRef) -> str:
    return f"Model set to {model}"


def format_current_think(level: str | None) -> str:
    return f"Thinking level: {level or 'off'}\n{THINK_LEVELS_LINE}"


def parse_think_arg(args: str) -> str:
    """`/think LEVEL`: the normalised level or CommandError."""
    level = normalize_think_level(args)
    if level is None:
        raise CommandError(f"Invalid level: {args}\n{THINK_LEVELS_LINE}")
    return level


def format_think_set(level: str) -> str:
    return f"Thinking level set to {level}"
