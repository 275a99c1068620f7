"""The fallback chain through a real gateway: a turn one model cannot answer after its
retries goes to the next, the chat says which model answered and why, the history and the
usage ledger name the model that really answered. Real SDKs, the fake LLM server."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from tests.agent.conftest import EventLog
from tests.failover.conftest import configure
from tests.failover.conftest import fake_provider
from tests.fakes import provider_errors as real
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.providers import NoSleep

KEY = "agent:main:main"
ALPHA = {"provider": "alpha", "id": "alpha-1"}
BETA = {"provider": "beta", "id": "beta-1"}
ATTEMPTS = 2  # with a model after it: one try and one retry (the last model: three)


async def chain(client: GatewayClient, llm: FakeLLMServer, *fallbacks: Any) -> None:
    """alpha (Anthropic API) first, then `fallbacks`; beta and gamma speak OpenAI's."""
    await configure(client, {
        "providers.alpha": fake_provider(llm, "anthropic"),
        "providers.beta": fake_provider(llm, "openai"),
        "providers.gamma": fake_provider(llm, "openai"),
        "model": {**ALPHA, "fallbacks": list(fallbacks)},
    })  # fmt: skip


async def run_turn(client: GatewayClient, log: EventLog) -> tuple[str, dict[str, Any]]:
    run = str((await client.call("chat.send", {"sessionKey": KEY, "message": "q"}))["runId"])
    return run, await log.ended(run)


def notices(log: EventLog, run: str) -> list[str]:
    return [p["text"] for p in log.of_run(run, "session.notice") if p["kind"] == "failover"]


async def last_assistant(client: GatewayClient) -> dict[str, Any]:
    preview = await client.call("session.preview", {"sessionKey": KEY})
    return [m for m in preview["messages"] if m["role"] == "assistant"][-1]


async def test_an_overloaded_model_hands_the_turn_to_the_next(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, waits: NoSleep
) -> None:
    """alpha-1 stays overloaded through its retries: beta-1 answers, the chat says so,
    the history and the usage ledger name beta-1."""
    await chain(client, llm, BETA)
    llm.enqueue(*[real.ANTHROPIC_OVERLOADED] * ATTEMPTS, reply("Beta ", "here."))
    run, ended = await run_turn(client, log)
    assert ended["state"] == "final"
    assert notices(log, run) == ["answered by beta-1: alpha-1 overloaded"]
    deltas = [p["text"] for p in log.of_run(run) if p["state"] == "delta"]
    assert "".join(deltas) == "Beta here."
    message = await last_assistant(client)
    assert (message["provider"], message["model"]) == ("beta", "beta-1")
    usage = await client.call("usage.get", {"groupBy": "model"})
    assert [g["name"] for g in usage["groups"]] == ["beta/beta-1"]
    assert llm.requests[-1].body["model"] == "beta-1" and llm.requests[-1].api == "openai"
    assert waits.delays == [1.0]  # one retry of alpha, then the switch


async def test_a_rate_limit_honours_retry_after_before_moving_on(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, waits: NoSleep
) -> None:
    """The retry-after alpha sends is waited for once; when alpha still refuses, beta
    answers."""
    await chain(client, llm, BETA)
    llm.enqueue(*[real.ANTHROPIC_RATE_LIMIT] * ATTEMPTS, reply("ok"))
    run, ended = await run_turn(client, log)
    assert ended["state"] == "final"
    assert notices(log, run) == ["answered by beta-1: alpha-1 rate limited"]
    assert waits.delays == [7.0]


async def test_a_cut_stream_then_another_model_shows_each_word_once(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """alpha's stream is cut twice after some words; beta's answer is not shown twice."""
    await chain(client, llm, BETA)
    cut = reply("The answer ", end="aborted")
    llm.enqueue(cut, cut, reply("The answer ", "is 42."))
    run, ended = await run_turn(client, log)
    assert ended["state"] == "final"
    deltas = [p for p in log.of_run(run) if p["state"] == "delta"]
    assert "".join(p["text"] for p in deltas) == "The answer is 42."
    assert notices(log, run) == ["answered by beta-1: alpha-1 stream cut"]


async def test_a_rejected_key_and_an_unconfigured_provider_are_skipped(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """A 401 is not retried; a fallback naming an unknown provider is passed over."""
    await chain(
        client, llm, {"provider": "nowhere", "id": "x-1"}, {"provider": "gamma", "id": "g-1"}
    )
    llm.enqueue(real.ANTHROPIC_BAD_KEY, reply("gamma answers"))
    run, ended = await run_turn(client, log)
    assert ended["state"] == "final"
    assert notices(log, run) == ["answered by g-1: alpha-1 key rejected, x-1 not configured"]
    assert len(llm.requests) == 2


async def test_when_no_model_answers_the_error_names_each(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """Every model of the chain failing ends the run with each one's reason."""
    await chain(client, llm, BETA)
    llm.enqueue(real.ANTHROPIC_BAD_KEY, real.OPENAI_NO_QUOTA)
    _, ended = await run_turn(client, log)
    assert ended["state"] == "error"
    assert ended["error"].startswith("no model could answer (alpha-1: alpha rejected the API key")
    assert "beta-1: beta refused the request: quota exhausted" in ended["error"]


async def test_agent_and_session_fallbacks_replace_the_global_list(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """agents.list[].fallbacks wins over model.fallbacks, a session's over both; a session's
    empty list means none."""
    await chain(client, llm, BETA)
    await configure(client, {"agents.list": [{"id": "main", "fallbacks": ["gamma/g-agent"]}]})
    llm.enqueue(real.ANTHROPIC_NO_MODEL, reply("agent's"))
    run, _ = await run_turn(client, log)
    assert notices(log, run) == ["answered by g-agent: alpha-1 model not found"]

    patch = {"sessionKey": KEY, "settings": {"fallbacks": [{"provider": "beta", "id": "b-s"}]}}
    await client.call("session.patch", patch)
    llm.enqueue(real.ANTHROPIC_NO_MODEL, reply("session's"))
    run, _ = await run_turn(client, log)
    assert notices(log, run) == ["answered by b-s: alpha-1 model not found"]

    await client.call("session.patch", {"sessionKey": KEY, "settings": {"fallbacks": []}})
    llm.enqueue(real.ANTHROPIC_NO_MODEL, reply("unused"))
    _, ended = await run_turn(client, log)
    assert ended["state"] == "error" and "404 not found" in ended["error"]


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ("model.fallbacks", "openai/gpt-4o", "model.fallbacks is a list of models"),
        ("model.fallbacks", ["gpt-4o"], "model.fallbacks[0] is not a model"),
        ("model.fallbacks", [{"provider": "openai"}], "model.fallbacks[0] is not a model"),
        ("model.fallbacks", [{"provider": "o", "id": "m", "x": 1}], "model.fallbacks[0]"),
        ("model.fallbacks", ["a/b"] * 9, "at most 8"),
        ("agents.list", [{"id": "main", "fallbacks": [3]}], "agents.list[0].fallbacks[0]"),
    ],
)
async def test_bad_fallbacks_are_refused_with_the_entry_named(
    client: GatewayClient, path: str, value: Any, says: str
) -> None:
    """config.set refuses a malformed fallback list and says which entry and what shape."""
    with pytest.raises(InvalidParams) as caught:
        await client.call("config.set", {"path": path, "value": value})
    assert says in caught.value.message


async def test_a_session_fallback_must_name_provider_and_id(client: GatewayClient) -> None:
    """session.patch refuses a fallback without an id."""
    bad = {"sessionKey": KEY, "settings": {"fallbacks": [{"provider": "beta"}]}}
    with pytest.raises(InvalidParams, match="fallbacks"):
        await client.call("session.patch", bad)
