"""Automatic compaction: when the next request would no longer
fit the model's context window minus `compaction.reserveTokens`, older messages are
summarised by the session's model into one *summary message* (the original faked a user
message) and the raw messages are archived, so nothing is lost.

The pure parts (token estimates, the decision, where to cut, the summariser's prompt and
its answer) are functions here; `summarise()` calls the provider.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from gsv_core.errors import GsvError
from gsv_core.protocol.messages import Usage, add_usage, empty_usage, text_of, tool_calls
from gsv_core.providers.base import AssistantBuilder, ModelRequest, Provider

SUMMARY_ROLE = "summary"
DEFAULT_WINDOW = 128_000
TOOL_TEXT_MAX = 2_000
IMAGE_TOKENS = 1_600
CHUNK_SHARE = 0.25  # each summarised chunk holds at most this share of the window
OVERSIZED_SHARE = 0.5  # a single message bigger than this share is described, not sent

# context windows by model id prefix (first match wins); `providers.<name>.contextWindow`
# and `model.contextWindow` in the config override these
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gemini", 1_048_576),
    ("llama", 128_000),
    ("qwen", 128_000),
    ("mistral", 128_000),
)


def context_window(config: dict[str, Any], provider: str, model_id: str) -> int:
    """The context window of a model, in tokens."""
    configured = (config.get("providers") or {}).get(provider, {}).get("contextWindow")
    if isinstance(configured, int) and configured > 0:
        return configured
    default_model = config.get("model") or {}
    override = default_model.get("contextWindow")
    same_model = default_model.get("provider") == provider and default_model.get("id") == model_id
    if same_model and isinstance(override, int) and override > 0:
        return override
    lowered = model_id.lower().rsplit("/", 1)[-1]
    for prefix, window in KNOWN_WINDOWS:
        if lowered.startswith(prefix):
            return window
    return DEFAULT_WINDOW


def estimate_tokens(message: Any) -> int:
    """A cheap upper-leaning estimate: JSON length / 4 * 1.2, plus a fixed cost per image."""
    content = message.get("content") if isinstance(message, dict) else None
    images = 0
    if isinstance(content, list):
        images = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
        content = [b for b in content if not (isinstance(b, dict) and b.get("type") == "image")]
        message = {**message, "content": content}
    return math.ceil(len(json.dumps(message, ensure_ascii=False)) / 4 * 1.2) + images * IMAGE_TOKENS


def estimate_text(text: str) -> int:
    return math.ceil(len(text) / 4 * 1.2)


def needs_compaction(
    history: list[dict[str, Any]],
    window: int,
    reserve: int,
    last_input_tokens: int | None,
    system_tokens: int,
    history_tokens: int | None = None,
) -> bool:
    """Whether the next request would not fit `window - reserve` tokens.

    The provider's real count of the last request is used when known, plus an estimate of
    whatever was added since; otherwise everything is estimated. `history_tokens`: the
    history's estimate when the caller keeps it (agent/token_estimates.py)."""
    if len(history) <= 2:
        return False
    threshold = window - reserve
    if history_tokens is None:
        history_tokens = sum(estimate_tokens(m) for m in history)
    estimate = system_tokens + history_tokens
    if last_input_tokens:
        estimate = max(estimate, last_input_tokens)
    return estimate > threshold


def compaction_cut(history: list[dict[str, Any]], keep_recent_tokens: int) -> int:
    """How many leading messages to summarise: the recent part keeps up to
    `keep_recent_tokens`, at least one message is summarised, and the kept part never
    starts with a tool result (its call stays with it). 0: nothing to do."""
    kept_tokens, cut = 0, len(history)
    while cut > 1:
        cost = estimate_tokens(history[cut - 1])
        if kept_tokens + cost > keep_recent_tokens:
            break
        kept_tokens += cost
        cut -= 1
    return _keep_calls_with_results(history, min(cut, len(history) - 1))


def message_cut(history: list[dict[str, Any]], keep: int) -> int:
    """How many leading messages `/compact` archives so about `keep` remain (the same
    rule as `compaction_cut`: the kept part never starts with a tool result)."""
    return _keep_calls_with_results(history, max(0, len(history) - keep))


def _keep_calls_with_results(history: list[dict[str, Any]], cut: int) -> int:
    """Move a cut earlier until the kept part does not start with a tool result, so a
    tool call and its result are archived or kept together, never split."""
    while 0 < cut < len(history) and history[cut].get("role") == "toolResult":
        cut -= 1
    return cut


def serialise(message: dict[str, Any]) -> str:
    """One message as the summariser reads it."""
    role = message.get("role")
    if role == SUMMARY_ROLE:
        return f"[earlier summary]: {text_of(message)}"
    if role == "toolResult":
        text = text_of(message)
        if len(text) > TOOL_TEXT_MAX:
            text = text[:TOOL_TEXT_MAX] + "\n[...truncated]"
        return f"[tool result: {message.get('toolName')}]: {text}"
    lines = []
    text = text_of(message)
    if text.strip():
        lines.append(f"[{role}]: {text}")
    calls = tool_calls(message)
    if calls:
        lines.append(f"[{role} tool calls]: " + ", ".join(c["name"] for c in calls))
    return "\n".join(lines)


SUMMARISER_SYSTEM = (
    "You condense a conversation between a user and their AI agent so the agent can carry "
    "on without the full transcript. Keep decisions, facts, open tasks, names, paths, "
    "commands and results that still matter; drop chit-chat and repetition. Write the "
    "summary in <summary></summary>. Then list durable facts about the user or their "
    "machines worth keeping in long-term memory in <memories></memories> (empty if none)."
)


def summariser_prompt(previous: str | None, conversation: str, memory: str | None) -> str:
    parts = []
    if previous:
        parts.append(f"<previous-summary>\n{previous}\n</previous-summary>")
    if memory:
        parts.append(f"<existing-memories>\n{memory}\n</existing-memories>")
    parts.append(f"<conversation>\n{conversation}\n</conversation>")
    parts.append("Update the summary to cover the conversation above.")
    return "\n\n".join(parts)


def parse_summary(text: str) -> tuple[str, str]:
    """(summary, memories) from the summariser's answer (the whole text if untagged)."""
    summary = _tagged(text, "summary")
    memories = _tagged(text, "memories")
    return (summary if summary is not None else text).strip(), (memories or "").strip()


def _tagged(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1) if match else None


def chunks(messages: list[dict[str, Any]], window: int) -> list[list[dict[str, Any]]]:
    """Consecutive groups of at most CHUNK_SHARE of the window (a huge message alone)."""
    limit = max(1, int(window * CHUNK_SHARE))
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for message in messages:
        cost = estimate_tokens(message)
        if current and size + cost > limit:
            groups.append(current)
            current, size = [], 0
        current.append(message)
        size += cost
    if current:
        groups.append(current)
    return groups


@dataclass
class Summary:
    text: str
    memories: str
    usage: Usage
    tier: str  # "full", "partial" or "plaintext"


async def summarise(
    provider: Provider,
    model: str,
    messages: list[dict[str, Any]],
    window: int,
    existing_memory: str | None = None,
) -> Summary:
    """Summarise `messages` chunk by chunk with a rolling summary. If the model fails, try
    again leaving out oversized messages; if that fails too, a plain note stands in."""
    usage = empty_usage()
    for tier, drop_large in (("full", False), ("partial", True)):
        try:
            text, memories, used = await _rolling(
                provider, model, messages, window, existing_memory, drop_large
            )
        except GsvError:
            continue
        usage = add_usage(usage, used)
        return Summary(text, memories, usage, tier)
    images = sum(
        1
        for m in messages
        for b in (m.get("content") or [])
        if isinstance(b, dict) and b.get("type") == "image"
    )
    note = f"[{len(messages)} earlier messages were compacted; no summary could be made."
    note += f" They included {images} image(s)." if images else ""
    return Summary(note + " The full transcript is archived.]", "", usage, "plaintext")


async def _rolling(
    provider: Provider,
    model: str,
    messages: list[dict[str, Any]],
    window: int,
    existing_memory: str | None,
    drop_large: bool,
) -> tuple[str, str, Usage]:
    summary: str | None = None
    memories: list[str] = []
    usage = empty_usage()
    for group in chunks(messages, window):
        lines = []
        for message in group:
            size = estimate_tokens(message)
            if drop_large and size > window * OVERSIZED_SHARE:
                lines.append(
                    f"[Large message block (~{size // 1000}K tokens) omitted from summary]"
                )
            else:
                lines.append(serialise(message))
        prompt = summariser_prompt(
            summary, "\n".join(line for line in lines if line), existing_memory
        )
        answer, used = await _complete(provider, model, prompt)
        usage = add_usage(usage, used)
        summary, found = parse_summary(answer)
        if found:
            memories.append(found)
    return summary or "", "\n".join(memories), usage


async def _complete(provider: Provider, model: str, prompt: str) -> tuple[str, Usage]:
    request = ModelRequest(
        model=model,
        system=SUMMARISER_SYSTEM,
        messages=[{"role": "user", "content": prompt, "timestamp": 0}],
    )
    builder = AssistantBuilder(provider.name, model)
    async for event in provider.stream(request):
        builder.add(event)
    message = builder.message(0)
    return text_of(message), builder.usage


def summary_message(text: str, compacted: int, archived_to: str | None, now: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": SUMMARY_ROLE,
        "content": text,
        "compactedMessages": compacted,
        "timestamp": now,
    }
    if archived_to:
        message["archivedTo"] = archived_to
    return message


@dataclass(frozen=True)
class CompactionNote:
    """What a compaction took out of a session, for the agent's daily memory file."""

    session_key: str
    summary: str
    memories: str
    compacted: int
    archive: str | None  # relative to the agent's folder (sessions/<id>-part<n>.jsonl.gz)


def compaction_note_text(note: CompactionNote, clock: str, first_ref: str | None) -> str:
    """The block appended to memory/<date>.md: the summary's facts and decisions and the
    memories found, with where the full transcript is (its file and the search ref of its
    first message, which gsv__MemoryGet opens)."""
    lines = [f"### Compaction of {note.session_key} ({clock})", ""]
    if note.archive:
        where = f"Transcript of the {note.compacted} earlier messages: `{note.archive}`"
        lines.append(where + (f" (gsv__MemoryGet ref `{first_ref}`)." if first_ref else "."))
    else:
        lines.append(f"The {note.compacted} earlier messages could not be archived.")
    lines += ["", "Summary:", "", note.summary.strip()]
    if note.memories.strip():
        lines += ["", "Memories:", "", note.memories.strip()]
    return "\n".join(lines) + "\n"


def as_model_message(message: dict[str, Any]) -> dict[str, Any]:
    """A stored summary as the model reads it: a user message saying what it is."""
    return {
        "role": "user",
        "content": f"[Summary of the earlier conversation]\n\n{message.get('content', '')}",
        "timestamp": message.get("timestamp", 0),
    }
