"""`providers.<name>.toolCalls` (docs/models.md#tool-calls): how a provider's models are
given tools.

* `native` (default): tools go in the API's own field and calls come back as the API's
  tool calls.
* `text`: no tools in the API field; the system prompt describes them
  (text_tool_calls.catalogue) and a reply that is exactly one call written as JSON becomes
  a tool call. Its text was streamed as it came; a `TextRetracted` event tells the chat
  to drop it (gsv_core/agent/shown_text.py) before the call's events.
* `off`: no tools at all; the model answers in words.

In `text` and `off` the history's earlier calls and results are written as text as
well: an API refuses tool results in a request that offers no tools, and a model that
cannot make native calls reads them better as words.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator
from collections.abc import Collection
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from gsv_core.protocol.messages import STOP_TOOL_USE
from gsv_core.protocol.messages import AssistantMessage
from gsv_core.protocol.messages import ImageBlock
from gsv_core.protocol.messages import Message
from gsv_core.protocol.messages import TextBlock
from gsv_core.protocol.messages import ToolResultMessage
from gsv_core.protocol.messages import UserMessage
from gsv_core.protocol.messages import text_of
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Stop
from gsv_core.providers.base import StreamEvent
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import TextRetracted
from gsv_core.providers.base import ToolCallDelta
from gsv_core.providers.base import ToolCallEnd
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.base import UsageReport
from gsv_core.providers.text_tool_calls import call_text
from gsv_core.providers.text_tool_calls import catalogue
from gsv_core.providers.text_tool_calls import parse_text_tool_call
from gsv_core.providers.text_tool_calls import result_text

NATIVE, TEXT, OFF = "native", "text", "off"
TOOL_CALL_MODES = (NATIVE, TEXT, OFF)
OFF_NOTE = "No tools are available in this conversation: answer in plain words."


def adapt_request(request: ModelRequest, mode: str) -> ModelRequest:
    """`request` as a provider in `mode` sends it."""
    if mode == NATIVE:
        return request
    if not request.tools:
        section = ""
    elif mode == TEXT:
        section = catalogue(request.tools)
    else:
        section = OFF_NOTE
    system = f"{request.system}\n\n{section}" if request.system and section else request.system
    return replace(
        request, system=system or section, messages=text_history(request.messages), tools=[]
    )


def text_history(messages: list[Message]) -> list[Message]:
    """`messages` with tool calls written as text, and each run of tool results as one
    user message."""
    out: list[Message] = []
    results: UserMessage | None = None  # the user message the current run of results fills
    for message in messages:
        if message["role"] != "toolResult":
            results = None
            out.append(_calls_as_text(message) if message["role"] == "assistant" else message)
        elif results is None:
            results = {"role": "user", "content": _result_blocks(message),
                       "timestamp": message["timestamp"]}  # fmt: skip
            out.append(results)
        else:
            results["content"].extend(_result_blocks(message))  # type: ignore[union-attr]
    return out


def _result_blocks(message: ToolResultMessage) -> list[TextBlock | ImageBlock]:
    text = result_text(message["toolName"], text_of(message), message["isError"])
    images = [block for block in message["content"] if block["type"] == "image"]
    return [{"type": "text", "text": text}, *images]


def _calls_as_text(message: AssistantMessage) -> AssistantMessage:
    if not any(block["type"] == "toolCall" for block in message["content"]):
        return message
    content: list[Any] = [
        {"type": "text", "text": call_text(block["name"], block["arguments"])}
        if block["type"] == "toolCall"
        else block
        for block in message["content"]
    ]
    return {**message, "content": content}


async def text_calls(
    events: AsyncGenerator[StreamEvent, None], offered: Collection[str]
) -> AsyncGenerator[StreamEvent, None]:
    """`events`, and when the whole reply's text is one call of an `offered` tool: that
    text retracted and the call made. Usage and the stop wait for the end, so that the
    stop can say the step called a tool."""
    said: list[str] = []
    held: list[StreamEvent] = []
    native = False
    async with aclosing(events):
        async for event in events:
            if isinstance(event, UsageReport | Stop):
                held.append(event)
                continue
            if isinstance(event, TextDelta):
                said.append(event.text)
            elif isinstance(event, ToolCallStart):
                native = True  # a server that made a native call anyway: left as it is
            yield event
    call = None if native else parse_text_tool_call("".join(said), offered)
    if call is not None:
        yield TextRetracted()
        yield ToolCallStart(0, f"call_text_{uuid.uuid4().hex[:12]}", call.name)
        yield ToolCallDelta(0, json.dumps(call.arguments))
        yield ToolCallEnd(0)
    for event in held:
        yield Stop(STOP_TOOL_USE) if call is not None and isinstance(event, Stop) else event
