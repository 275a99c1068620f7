"""A stream cut after some words is answered again without showing the first attempt's
words twice: not in the chat's deltas, not in the channel's message, not in the stored
history. Real gateway, real SDKs, the fake LLM server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.client import GatewayClient
from tests.agent.conftest import EventLog
from tests.failover.conftest import configure
from tests.failover.conftest import fake_provider
from tests.fakes import provider_errors as real
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.gateway.test_foreign_channel import Running

KEY = "agent:main:main"


def deltas(log: EventLog, run_id: str) -> list[dict[str, Any]]:
    return [p for p in log.of_run(run_id) if p["state"] == "delta"]


async def use_fake(client: GatewayClient, llm: FakeLLMServer, api: str) -> None:
    """The fake LLM server as provider `fake` speaking `api`, model `alpha-1`."""
    model = {"provider": "fake", "id": "alpha-1"}
    await configure(client, {"providers.fake": fake_provider(llm, api), "model": model})


async def send(client: GatewayClient, text: str = "q") -> str:
    return str((await client.call("chat.send", {"sessionKey": KEY, "message": text}))["runId"])


async def stored_texts(client: GatewayClient, key: str = KEY) -> list[str]:
    preview = await client.call("session.preview", {"sessionKey": key})
    return [
        "".join(b["text"] for b in m["content"] if b.get("type") == "text")
        for m in preview["messages"]
        if m["role"] == "assistant"
    ]


@pytest.mark.parametrize(
    ("api", "cut"),
    [
        ("anthropic", reply("The answer ", "is for", end="aborted")),
        ("openai", reply("The answer ", "is for", end="aborted")),
        ("anthropic", reply("The answer ", real.ANTHROPIC_STREAM_OVERLOADED)),
        ("openai", reply("The answer ", real.OPENAI_STREAM_ERROR)),
    ],
    ids=["anthropic-dropped", "openai-dropped", "anthropic-error-event", "openai-error-chunk"],
)
async def test_a_cut_stream_is_answered_again_without_repeating_words(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, api: str, cut: Any
) -> None:
    """The chat's deltas add up to the answer once; the history stores it once."""
    await use_fake(client, llm, api)
    llm.enqueue(cut, reply("The answer ", "is forty", "-two."))
    run = await send(client)
    ended = await log.ended(run)
    assert ended["state"] == "final"
    shown = deltas(log, run)
    assert "".join(d["text"] for d in shown) == "The answer is forty-two."
    assert not any(d.get("replace") for d in shown)
    assert await stored_texts(client) == ["The answer is forty-two."]
    assert len(llm.requests) == 2


async def test_an_attempt_saying_something_else_replaces_the_shown_text(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """When the second attempt words it otherwise, a `replace` delta starts its text over."""
    await use_fake(client, llm, "openai")
    llm.enqueue(reply("Forty", " two", end="aborted"), reply("It is ", "42."))
    run = await send(client)
    assert (await log.ended(run))["state"] == "final"
    shown = [(d["text"], bool(d.get("replace"))) for d in deltas(log, run)]
    assert shown == [("Forty", False), (" two", False), ("It is ", True), ("42.", False)]
    assert await stored_texts(client) == ["It is 42."]


async def test_a_stream_cut_twice_fails_with_the_reason(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """A cut stream is tried once more, not forever: a second cut ends the run clearly."""
    await use_fake(client, llm, "openai")
    llm.enqueue(reply("Par", end="aborted"), reply("Par", end="aborted"), reply("unused"))
    run = await send(client)
    ended = await log.ended(run)
    assert ended["state"] == "error" and "stream ended before" in ended["error"]
    assert llm.pending == 1


async def test_a_channel_gets_the_answer_once(
    client: GatewayClient, channel: Running, llm: FakeLLMServer
) -> None:
    """A channel peer's message whose stream was cut gets one reply with the words once."""
    await use_fake(client, llm, "anthropic")
    llm.enqueue(reply("Hello ", "the", end="aborted"), reply("Hello ", "there."))
    await channel.write("alice", "hi")
    [answer] = await channel.adapter.wait_for(1)
    assert answer["text"] == "Hello there."
    assert len(llm.requests) == 2


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_cut_attempt_is_spending_too(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, api: str
) -> None:
    """The provider billed the attempt it cut: the ledger has a row for it (its usage
    estimated where the stream did not report it before the cut) beside the answer's, and
    the run's usage counts both."""
    await use_fake(client, llm, api)
    llm.enqueue(reply("The answer ", "is for", end="aborted"), reply("The answer is 42."))
    run = await send(client, "what is it? " + "x" * 400)
    ended = await log.ended(run)
    assert ended["state"] == "final"
    report = await client.call("usage.get", {"groupBy": "model"})
    [model] = report["groups"]
    assert model["calls"] == 2
    # the cut attempt read the whole request (about 120 tokens of the message alone) and
    # wrote its words; the answer's own report is smaller than the two together
    answered = ended["usage"]
    assert model["input"] >= 120 and model["output"] >= 1
    assert answered["input"] == model["input"] and answered["output"] == model["output"]
    assert (await stored_texts(client)) == ["The answer is 42."]
