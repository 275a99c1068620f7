"""FakeProvider: an in-process scripted model for agent-loop tests (house style 9).

    fake = FakeProvider()
    fake.enqueue("Hello ", "world")                       # a text reply in two deltas
    fake.enqueue(call("n1__Read", {"path": "a"}))         # a tool call
    fake.enqueue("thinking...", gate)                     # waits on `gate` mid-stream
    config = ServerConfig(database=..., provider_factory=fake.factory)

Every request is recorded in `fake.requests`. With nothing queued it answers "ok".
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.errors import GsvError
from gsv_core.protocol.messages import STOP_END
from gsv_core.protocol.messages import STOP_TOOL_USE
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Provider
from gsv_core.providers.base import Stop
from gsv_core.providers.base import StreamEvent
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import ToolCallDelta
from gsv_core.providers.base import ToolCallEnd
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.base import UsageReport


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")


def call(name: str, arguments: dict[str, Any] | None = None, call_id: str | None = None) -> Call:
    return Call(name, arguments or {}, call_id or f"call_{uuid.uuid4().hex[:12]}")


@dataclass(frozen=True)
class Fail:
    error: GsvError


Part = str | Call | asyncio.Event | Fail


class FakeProvider:
    name = "fake"

    def __init__(self) -> None:
        self.turns: deque[list[Part]] = deque()
        self.requests: list[ModelRequest] = []
        self.streaming = asyncio.Event()  # set while a stream is in progress
        self.usage = {"input": 10, "output": 5, "total": 15}
        # requests whose system prompt starts with a key are answered by its parts, without
        # using the queue (e.g. the compaction summariser, called once per chunk)
        self.by_system: dict[str, list[Part]] = {}

    def enqueue(self, *parts: Part) -> None:
        self.turns.append(list(parts))

    def factory(self, name: str, config: dict[str, Any], llm_timeout: float) -> Provider:
        return self

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        fixed = next((p for k, p in self.by_system.items() if request.system.startswith(k)), None)
        parts = fixed if fixed is not None else self.turns.popleft() if self.turns else ["ok"]
        calls = 0
        self.streaming.set()
        try:
            for part in parts:
                if isinstance(part, asyncio.Event):
                    await part.wait()
                elif isinstance(part, Fail):
                    raise part.error
                elif isinstance(part, Call):
                    yield ToolCallStart(calls, part.id, part.name)
                    yield ToolCallDelta(calls, json.dumps(part.arguments))
                    yield ToolCallEnd(calls)
                    calls += 1
                else:
                    yield TextDelta(part)
            yield UsageReport(dict(self.usage))  # type: ignore[arg-type]
            yield Stop(STOP_TOOL_USE if calls else STOP_END)
        finally:
            self.streaming.clear()
