"""Provider adapter tests: the real SDKs over HTTP against tests/fakes/llm_server.py.

Shared helpers: `collect()` runs a stream to its end; `NoSleep` is a retry policy's sleep
that records the waits instead of waiting.
"""

from __future__ import annotations

from typing import Any

from gsv_core.protocol.messages import AssistantMessage
from gsv_core.protocol.messages import Message
from gsv_core.providers.base import AssistantBuilder
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Provider
from gsv_core.providers.base import StreamEvent
from gsv_core.providers.base import ToolSpec
from gsv_core.providers.retry import RetryPolicy


class NoSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def no_sleep_policy(**options: Any) -> tuple[RetryPolicy, NoSleep]:
    sleep = NoSleep()
    return RetryPolicy(sleep=sleep, jitter=lambda: 0.0, **options), sleep


async def collect(provider: Provider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


def assemble(
    provider: Provider, request: ModelRequest, events: list[StreamEvent]
) -> AssistantMessage:
    builder = AssistantBuilder(provider.name, request.model)
    for event in events:
        builder.add(event)
    return builder.message(timestamp=0)


def ask(text: str = "hi", **options: Any) -> ModelRequest:
    """A one-message request."""
    messages: list[Message] = [{"role": "user", "content": text, "timestamp": 1}]
    return ModelRequest(model="fake-model", system="You are a test.", messages=messages, **options)


READ_TOOL = ToolSpec(
    name="n1__Read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
