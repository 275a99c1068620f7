"""Automatic compaction: when the next request would no longer
fit the model's context window minus `compaction.reserveTokens`, older messages are
summarised by the session's model into one *summary message* (the original faked a user
message) and the raw messages are archived, so nothing is lost.

The pure parts (token estimates, the decision, where to cut, the summariser's prompt and
its answer) are functions here; `summarise()` calls the provider. A message too big for
the window (oversized.py) is counted and sent as its bounded excerpt, never whole, and a
chunk the summariser failed is tried once more as short excerpts, never re-sent as it was.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from gsv_core.errors import GsvError
from gsv_core.protocol.excerpt import excerpt
from gsv_core.protocol.excerpt import strings_length
from gsv_core.protocol.messages import Usage
from gsv_core.protocol.messages import add_usage
from gsv_core.protocol.messages import empty_usage
from gsv_core.protocol.messages import text_of
from gsv_core.protocol.messages import tool_calls
from gsv_core.providers.base import AssistantBuilder
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Provider

SUMMARY_ROLE = "summary"
DEFAULT_WINDOW = 128_000
TOOL_TEXT_MAX = 2_000
IMAGE_TOKENS = 1_600
CHUNK_SHARE = 0.25  # each summarised chunk holds at most this share of the window
CHARS_PER_TOKEN = 4 / 1.2  # the inverse of the estimate below
# of a small window (a local model's 8,192), `compaction.reserveTokens` and
# `compaction.keepRecentTokens` each take at most this share: with their defaults (20,000
# each) such a window would be over budget from its third message and compact every turn
SMALL_WINDOW_SHARE = 0.25

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


def context_window(
    config: dict[str, Any], provider: str, model_id: str, reported: int | None = None
) -> int:
    """The context window of a model, in tokens: the config's, else the one its server
    `reported` (Ollama: providers/ollama.py), else known by its id, else the default."""
    configured = (config.get("providers") or {}).get(provider, {}).get("contextWindow")
    if isinstance(configured, int) and configured > 0:
        return configured
    default_model = config.get("model") or {}
    override = default_model.get("contextWindow")
    same_model = default_model.get("provider") == provider and default_model.get("id") == model_id
    if same_model and isinstance(override, int) and override > 0:
        return override
    if reported:
        return reported
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


def text_parts(message: Any) -> list[Any]:
    """What of a message may be cut to fit a window (oversized.py): its string content,
    or per block the text of a text block, the arguments of a tool call, else None
    (images, thinking blocks, whose signatures the provider checks)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [_part(block) for block in content]


def _part(block: Any) -> Any:
    if not isinstance(block, dict):
        return None
    if block.get("type") == "text":
        return block.get("text")
    if block.get("type") == "toolCall":
        return block.get("arguments")
    return None


def estimate_capped(message: Any, cap: int | None) -> int:
    """`estimate_tokens(message)`, at most `cap`; a message whose text alone is over the
    cap is not encoded (its JSON is longer still): a 1 MB message costs no JSON
    encoding each time it is counted."""
    if cap is None:
        return estimate_tokens(message)
    if estimate_text_length(strings_length(text_parts(message))) > cap:
        return cap
    return min(estimate_tokens(message), cap)


def estimate_text_length(chars: int) -> int:
    return math.ceil(chars / 4 * 1.2)


def estimate_text(text: str) -> int:
    return estimate_text_length(len(text))


def within_window(tokens: int, window: int) -> int:
    """A reserve or a recent part of `tokens`, as a model with `window` can afford it."""
    return min(tokens, int(window * SMALL_WINDOW_SHARE))


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


def compaction_cut(
    history: list[dict[str, Any]], keep_recent_tokens: int, cap: int | None = None
) -> int:
    """How many leading messages to summarise: the recent part keeps up to
    `keep_recent_tokens`, at least one message is summarised, and the kept part never
    starts with a tool result (its call stays with it). 0: nothing to do. A message
    counts at most `cap` tokens: what the model is sent of it (oversized.py)."""
    kept_tokens, cut = 0, len(history)
    while cut > 1:
        cost = estimate_capped(history[cut - 1], cap)
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


def serialise(message: dict[str, Any], max_chars: int | None = None) -> str:
    """One message as the summariser reads it; its text cut to an excerpt of `max_chars`
    (a tool result's at most TOOL_TEXT_MAX)."""
    role = message.get("role")
    text = text_of(message)
    if role == SUMMARY_ROLE:
        return f"[earlier summary]: {text}"
    if role == "toolResult":
        limit = min(TOOL_TEXT_MAX, max_chars or TOOL_TEXT_MAX)
        if len(text) > limit:
            text = text[:limit] + "\n[...truncated]"
        return f"[tool result: {message.get('toolName')}]: {text}"
    if max_chars is not None:
        text = excerpt(text, max_chars, "too long to summarise whole")
    lines = []
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


def chunk_limit(window: int) -> int:
    """The most tokens of conversation one summariser request holds."""
    return max(1, int(window * CHUNK_SHARE))


def chunks(messages: list[dict[str, Any]], window: int) -> list[list[dict[str, Any]]]:
    """Consecutive groups of at most CHUNK_SHARE of the window; a message bigger than
    that is alone in its group, and is sent as an excerpt of that size."""
    limit = chunk_limit(window)
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for message in messages:
        cost = estimate_capped(message, limit)
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
    """Summarise `messages` chunk by chunk with a rolling summary. A chunk the model fails
    is tried once more with each message cut to a short excerpt (tier "partial"); the
    chunks already summarised are not sent again. If that fails too, a plain note stands
    in for what is left (tier "plaintext" when nothing was summarised)."""
    usage = empty_usage()
    summary: str | None = None
    memories: list[str] = []
    tier = "full"
    groups = chunks(messages, window)
    for done, group in enumerate(groups):
        attempt = await _summarise_chunk(provider, model, group, window, summary, existing_memory)
        if attempt is None:
            left = messages[sum(len(g) for g in groups[:done]) :]
            return _unsummarised(summary, left, "\n".join(memories), usage)
        answer, used, retried = attempt
        usage = add_usage(usage, used)
        tier = "partial" if retried else tier
        summary, found = parse_summary(answer)
        if found:
            memories.append(found)
    return Summary(summary or "", "\n".join(memories), usage, tier)


async def _summarise_chunk(
    provider: Provider,
    model: str,
    group: list[dict[str, Any]],
    window: int,
    summary: str | None,
    existing_memory: str | None,
) -> tuple[str, Usage, bool] | None:
    """The summariser's answer for one chunk, its usage, and whether it took the second
    try; None when both failed. The second try sends each message as a short excerpt,
    and is not made when that is the very text that just failed."""
    failed: str | None = None
    for max_chars in (int(chunk_limit(window) * CHARS_PER_TOKEN), TOOL_TEXT_MAX):
        conversation = "\n".join(line for m in group if (line := serialise(m, max_chars)))
        if conversation == failed:
            return None
        try:
            answer, used = await _complete(
                provider, model, summariser_prompt(summary, conversation, existing_memory)
            )
        except GsvError:
            failed = conversation
            continue
        return answer, used, failed is not None
    return None


def _unsummarised(
    summary: str | None, left: list[dict[str, Any]], memories: str, usage: Usage
) -> Summary:
    """The summary so far (if any) and a plain note for the messages it does not cover."""
    images = sum(
        1
        for m in left
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "image"
    )
    note = f"[{len(left)} earlier messages were compacted; no summary could be made."
    note += f" They included {images} image(s)." if images else ""
    note += " The full transcript is archived.]"
    if summary:
        return Summary(f"{summary}\n\n{note}", memories, usage, "partial")
    return Summary(note, memories, usage, "plaintext")


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
