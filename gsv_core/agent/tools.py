"""How the agent loop calls tools, without knowing where they run: the `ToolExecutor`
protocol (implemented by the gateway: native `gsv__*` tools and node tools), and the
turning of a tool's outcome into the toolResult message the model reads.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any
from typing import Protocol

from gsv_core.errors import GsvError
from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.errors import Unavailable
from gsv_core.protocol.messages import ImageBlock
from gsv_core.protocol.messages import TextBlock
from gsv_core.protocol.messages import ToolResultMessage
from gsv_core.providers.base import ToolSpec
from gsv_core.storage.media import MediaStore

TOOL_TIMED_OUT = "Tool execution timed out"
# sub-agents (gateway/native/spawn_tools.py): calls of it in one step run together, and a
# run limited to a tool subset (its `tools` override) never offers it
SPAWN_TOOL = "gsv__Spawn"
# tools found on demand (gateway/tool_search.py): a run given a tool subset keeps it
SEARCH_TOOL = "gsv__ToolSearch"
# a tool's text result is capped before it enters the history (the model sees the head
# and the tail, and is told how much was cut)
MAX_RESULT_CHARS = 100_000


@dataclass(frozen=True)
class ToolCallContext:
    """Who is calling: the session and run a tool call belongs to."""

    session_key: str
    agent_id: str
    run_id: str
    call_id: str
    main_session: bool = False
    # where the run came from (channel, accountId, peer ...), None for a client's run
    channel_context: dict[str, Any] | None = None
    run_source: str = "chat"  # what started the run (gsv_core/usage/ledger.py)


class ToolExecutor(Protocol):
    def specs(self, ctx: ToolCallContext) -> list[ToolSpec]:
        """The tools offered to the model for one run (a snapshot)."""
        ...

    def offers(self, name: str, ctx: ToolCallContext) -> bool:
        """Whether this run may call tool `name` at all (a guest's run: its reach only),
        whether or not it is in the request now (tools found on demand)."""
        ...

    def find(self, names: list[str], ctx: ToolCallContext) -> None:
        """Offer the tools `names` to this run from its next step, as if a search had
        found them (those it may not call, or that do not exist, are not offered)."""
        ...

    async def execute(self, name: str, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        """Run one tool; return its raw result or raise a GsvError (its message is what the
        model reads). Unknown tools raise NotFound."""
        ...


def error_result(call_id: str, name: str, message: str, now: int) -> ToolResultMessage:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": f"Error: {message}"}],
        "isError": True,
        "timestamp": now,
    }


def could_not_run(exc: GsvError) -> bool:
    """Whether a tool call failed for want of the tool rather than in the tool: nobody
    provides it (404), its node is offline or went away (503), or it did not answer in
    time (504). A tool that ran and failed (500), was refused (approval) or got bad
    arguments (400) is the model's to handle and does not count."""
    return isinstance(exc, NotFound | Unavailable | TimedOut)


def failure_message(exc: GsvError) -> str:
    return TOOL_TIMED_OUT if isinstance(exc, TimedOut) else exc.message


async def result_message(
    call_id: str, name: str, result: Any, media: MediaStore, session_key: str, now: int
) -> ToolResultMessage:
    """The toolResult for a successful call: structured content blocks are kept (images
    moved to the media store), strings are text, anything else is JSON text."""
    blocks = _content_blocks(result)
    if blocks is None:
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        content: list[TextBlock | ImageBlock] = [{"type": "text", "text": _capped(text)}]
    else:
        content = [await _stored(block, media, session_key) for block in blocks]
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": False,
        "timestamp": now,
    }


def _content_blocks(result: Any) -> list[dict[str, Any]] | None:
    """`{content: [...]}` where every block is text{text} or image{data, mimeType}."""
    if not isinstance(result, dict) or not isinstance(result.get("content"), list):
        return None
    blocks = result["content"]
    for block in blocks:
        if not isinstance(block, dict):
            return None
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            continue
        if (
            kind == "image"
            and isinstance(block.get("data"), str)
            and isinstance(block.get("mimeType"), str)
        ):
            continue
        return None
    return blocks or None


async def _stored(
    block: dict[str, Any], media: MediaStore, session_key: str
) -> TextBlock | ImageBlock:
    if block["type"] == "text":
        return {"type": "text", "text": _capped(block["text"])}
    mime = block["mimeType"]
    try:
        data = base64.b64decode(block["data"], validate=True)
    except (binascii.Error, ValueError):
        return {"type": "text", "text": f"[Invalid image data: {mime}]"}
    try:
        path = await media.save(session_key, data, mime)
    except OSError:
        return {"type": "text", "text": f"[Image storage failed: {mime}]"}
    return {"type": "image", "mimeType": mime, "mediaPath": path}


def _capped(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    half = MAX_RESULT_CHARS // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n\n[... {cut} characters cut ...]\n\n{text[-half:]}"
