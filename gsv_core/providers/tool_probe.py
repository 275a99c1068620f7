"""How a model calls tools, as `gsv models test` finds out (docs/models.md#tool-calls):
offered one harmless tool and asked to call it, natively first, then as text; a model
that does neither makes no tool calls. The answer says which `toolCalls` to set."""

from __future__ import annotations

from typing import Any
from typing import Literal

from gsv_core.errors import ProviderFailed
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import ToolCallStart
from gsv_core.providers.base import ToolSpec
from gsv_core.providers.registry import resolve_provider
from gsv_core.providers.retry import RetryPolicy
from gsv_core.providers.tool_call_modes import NATIVE
from gsv_core.providers.tool_call_modes import TEXT

ToolCallSupport = Literal["native", "text", "none"]
NATIVE_CALLS: ToolCallSupport = "native"
TEXT_CALLS: ToolCallSupport = "text"
NO_CALLS: ToolCallSupport = "none"
PROBE_TOOL = ToolSpec(
    "echo",
    "Say a word back. It does nothing else.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
PROBE_PROMPT = 'Call the echo tool with the text "ping". Do not answer in words.'
PROBE_MAX_TOKENS = 200  # room for a call written as JSON, and little more


async def probe_tool_calls(
    config: dict[str, Any], provider: str, model: str, timeout: float
) -> ToolCallSupport:
    """NATIVE_CALLS, TEXT_CALLS or NO_CALLS: how `model` answered the probe."""
    if await _called(config, provider, model, timeout, NATIVE):
        return NATIVE_CALLS
    if await _called(config, provider, model, timeout, TEXT):
        return TEXT_CALLS
    return NO_CALLS


async def _called(
    config: dict[str, Any], provider: str, model: str, timeout: float, mode: str
) -> bool:
    """Whether the model called the probe tool when offered it in `mode`."""
    client = resolve_provider(config, provider, llm_timeout=timeout,
                              retry=RetryPolicy(retries=0), tool_calls=mode)  # fmt: skip
    message: Any = {"role": "user", "content": PROBE_PROMPT, "timestamp": 0}
    request = ModelRequest(model, "", [message], [PROBE_TOOL], max_tokens=PROBE_MAX_TOKENS)
    try:
        events = [event async for event in client.stream(request)]
    except ProviderFailed as exc:
        if mode != NATIVE or exc.retryable:
            raise
        return False  # a server that refuses tools for this model ("does not support tools")
    return any(isinstance(e, ToolCallStart) and e.name == PROBE_TOOL.name for e in events)
