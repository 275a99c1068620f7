"""The fake LLM server itself: non-streaming answers and request recording, as later
tests rely on them."""

from __future__ import annotations

import anthropic
import openai

from gsv_core.providers.retry import http_client
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply


async def test_non_streaming_requests_get_complete_answers() -> None:
    """Without `stream`, both endpoints answer one JSON body the SDKs parse."""
    with fake_llm_server() as server:
        server.enqueue(reply("Hi ", "there", ToolCall("n1__Read", {"path": "a"}, id="c1")))
        server.enqueue(reply("Hello", usage=(3, 2)))
        oa_http = http_client(openai.DefaultAsyncHttpxClient, server.openai_base_url, 10)
        an_http = http_client(anthropic.DefaultAsyncHttpxClient, server.anthropic_base_url, 10)
        async with openai.AsyncOpenAI(
            api_key="k", base_url=server.openai_base_url, http_client=oa_http
        ) as oa:
            completion = await oa.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        async with anthropic.AsyncAnthropic(
            api_key="k", base_url=server.anthropic_base_url, http_client=an_http
        ) as an:
            message = await an.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
    choice = completion.choices[0]
    assert choice.message.content == "Hi there"
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    assert choice.message.tool_calls[0].function.arguments == '{"path": "a"}'
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (3, 2)
    assert [r.api for r in server.requests] == ["openai", "anthropic"]
    assert server.requests[1].body["max_tokens"] == 10


async def test_choose_answers_what_the_queue_does_not() -> None:
    """With `choose` set, a request the queue has no turn for is answered by it, after
    the queued turns."""
    from gsv_core.providers.base import TextDelta
    from gsv_core.providers.openai_compat import OpenAICompatProvider
    from tests.providers import ask
    from tests.providers import collect

    with fake_llm_server() as server:
        server.enqueue(reply("queued"))
        server.choose = lambda request: reply(f"chosen for {request.body['model']}")
        provider = OpenAICompatProvider(
            "fake", base_url=server.openai_base_url, api_key="k", llm_timeout=10
        )
        first = await collect(provider, ask())
        second = await collect(provider, ask())
    assert TextDelta("queued") in first
    assert TextDelta("chosen for fake-model") in second
