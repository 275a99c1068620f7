"""A prompt too long for the model, with the real SDKs and a fallback configured: the run
compacts and tries once more on the same model (another model is no cure), then says so."""

from __future__ import annotations

from typing import Any

from gsv_core.client import GatewayClient
from tests.agent.conftest import EventLog
from tests.failover.conftest import configure
from tests.failover.conftest import fake_provider
from tests.fakes import provider_errors as real
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply

KEY = "agent:main:main"


async def turn(client: GatewayClient, log: EventLog, text: str) -> tuple[str, dict[str, Any]]:
    run = str((await client.call("chat.send", {"sessionKey": KEY, "message": text}))["runId"])
    return run, await log.ended(run)


async def setup(client: GatewayClient, log: EventLog, llm: FakeLLMServer) -> None:
    await configure(client, {
        "providers.alpha": fake_provider(llm, "anthropic"),
        "providers.beta": fake_provider(llm, "openai"),
        "model": {"provider": "alpha", "id": "alpha-1", "fallbacks": ["beta/beta-1"]},
    })  # fmt: skip
    for text in ("one", "two"):
        llm.enqueue(reply(f"reply {text}"))
        await turn(client, log, text)


async def test_a_prompt_too_long_compacts_and_the_same_model_answers(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """ "prompt is too long": one compaction, one retry on alpha-1, no failover."""
    await setup(client, log, llm)
    llm.enqueue(real.ANTHROPIC_PROMPT_TOO_LONG, reply("<summary>Earlier: one, two.</summary>"))
    llm.enqueue(reply("made it"))
    _, ended = await turn(client, log, "three")
    assert ended["state"] == "final" and ended["message"]["model"] == "alpha-1"
    kinds = [p["kind"] for name, p in log.events if name == "session.notice"]
    assert kinds == ["compaction"]
    assert all(r.api == "anthropic" for r in llm.requests)


async def test_a_second_overflow_says_so(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """Still too long after compacting: the run ends saying so, advising /reset."""
    await setup(client, log, llm)
    llm.enqueue(real.ANTHROPIC_PROMPT_TOO_LONG, reply("<summary>s</summary>"))
    llm.enqueue(real.ANTHROPIC_PROMPT_TOO_LONG)
    _, ended = await turn(client, log, "three")
    assert ended["state"] == "error"
    assert "even after compacting it" in ended["error"] and "/reset" in ended["error"]
    assert all(r.api == "anthropic" for r in llm.requests)
