"""Key pools through a real gateway: several keys for one provider, tried in turn; a
rejected key set aside until the owner sets it again, a rate-limited one cooling down
after one retry-after, one out of quota for a day or until tested. The marks survive a
restart and show in gateway.status by fingerprint, never the key."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import serve
from gsv_core.providers.keys import QUOTA_COOLDOWN_MS
from gsv_core.providers.keys import fingerprint
from tests.agent.conftest import EventLog
from tests.failover.conftest import configure
from tests.failover.conftest import fake_provider
from tests.failover.conftest import gateway_config
from tests.fakes import provider_errors as real
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.providers import NoSleep

KEY = "agent:main:main"
K1, K2 = "sk-pool-one-4f1d", "sk-pool-two-9c2e"


async def use_pool(client: GatewayClient, llm: FakeLLMServer) -> None:
    await configure(client, {
        "providers.beta": fake_provider(llm, "openai"),
        "apiKeys.beta": [K1, K2],
        "model": {"provider": "beta", "id": "beta-1"},
    })  # fmt: skip


async def turn(client: GatewayClient, log: EventLog) -> dict[str, Any]:
    run = str((await client.call("chat.send", {"sessionKey": KEY, "message": "q"}))["runId"])
    return await log.ended(run)


def keys_used(llm: FakeLLMServer) -> list[str]:
    headers = [{k.lower(): v for k, v in r.headers.items()} for r in llm.requests]
    return [h["authorization"].removeprefix("Bearer ") for h in headers]


async def set_aside(client: GatewayClient) -> list[dict[str, Any]]:
    marks: list[dict[str, Any]] = (await client.call("gateway.status"))["providerKeys"]
    return marks


async def test_a_rejected_key_is_set_aside_until_the_owner_sets_it_again(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 on the first key: the second answers the same turn; the next turn skips the
    first; setting the keys again brings it back. No key in status, events or logs."""
    caplog.set_level(logging.DEBUG)
    await use_pool(client, llm)
    llm.enqueue(real.OPENAI_BAD_KEY, reply("second key"))
    assert (await turn(client, log))["state"] == "final"
    assert keys_used(llm) == [K1, K2]
    [mark] = await set_aside(client)
    assert mark == {"provider": "beta", "key": fingerprint(K1), "state": "rejected",
                    "reason": "key rejected", "until": None, "since": mark["since"]}  # fmt: skip
    await turn(client, log)
    assert keys_used(llm)[2:] == [K2]
    await configure(client, {"apiKeys.beta": [K1, K2]})
    assert await set_aside(client) == []
    await turn(client, log)
    assert keys_used(llm)[3:] == [K1]
    shown = json.dumps(log.events) + caplog.text + json.dumps(await client.call("gateway.status"))
    assert K1 not in shown and K2 not in shown


async def test_a_rate_limited_key_waits_once_then_cools_down_while_the_next_answers(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, waits: NoSleep
) -> None:
    """429 with retry-after: honoured once on the same key, then the next key answers
    and the first cools down for the retry-after."""
    await use_pool(client, llm)
    llm.enqueue(real.OPENAI_RATE_LIMIT, real.OPENAI_RATE_LIMIT, reply("ok"))
    assert (await turn(client, log))["state"] == "final"
    assert keys_used(llm) == [K1, K1, K2]
    assert waits.delays == [2.0]
    [mark] = await set_aside(client)
    assert (mark["key"], mark["state"], mark["reason"]) == (
        fingerprint(K1),
        "cooling",
        "rate limited",
    )
    assert mark["until"] - mark["since"] == 2000


async def test_an_exhausted_quota_cools_down_for_a_day_until_the_key_is_tested(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """insufficient_quota: the key cools down for a day; a `models.test` that answers
    clears it."""
    await use_pool(client, llm)
    llm.enqueue(real.OPENAI_NO_QUOTA, reply("ok"))
    await turn(client, log)
    [mark] = await set_aside(client)
    assert mark["reason"] == "out of quota" and mark["until"] - mark["since"] == QUOTA_COOLDOWN_MS
    await client.call("models.test", {})
    assert await set_aside(client) == []


async def test_a_test_clears_only_the_key_it_tried(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """Both keys set aside; `models.test` tries the first: its mark goes, the second key's
    stays (it was not tried)."""
    await use_pool(client, llm)
    llm.enqueue(real.OPENAI_BAD_KEY, real.OPENAI_NO_QUOTA)
    await turn(client, log)
    assert {m["key"] for m in await set_aside(client)} == {fingerprint(K1), fingerprint(K2)}
    await client.call("models.test", {})
    [left] = await set_aside(client)
    assert (left["key"], left["reason"]) == (fingerprint(K2), "out of quota")


async def test_marks_are_read_back_after_a_restart(
    tmp_path: Path, llm: FakeLLMServer, waits: NoSleep
) -> None:
    """A key set aside is still set aside when the gateway starts again on its database."""
    config = gateway_config(tmp_path, waits)
    async with serve(config, port=0) as first, GatewayClient(first.url, token=first.token) as c:
        events = EventLog(c)
        await use_pool(c, llm)
        llm.enqueue(real.OPENAI_BAD_KEY, reply("ok"))
        await turn(c, events)
        await events.close()
    async with serve(config, port=0) as again, GatewayClient(again.url, token=again.token) as c:
        [mark] = await set_aside(c)
        assert mark["key"] == fingerprint(K1)


async def test_every_key_set_aside_hands_the_turn_to_the_fallback(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """Both keys refused: the model cannot answer, the next model of the chain does, and
    the reason says the keys were set aside."""
    await use_pool(client, llm)
    await configure(client, {"providers.gamma": fake_provider(llm, "openai"),
                             "model.fallbacks": ["gamma/g-1"]})  # fmt: skip
    llm.enqueue(real.OPENAI_BAD_KEY, real.OPENAI_BAD_KEY, reply("gamma"))
    ended = await turn(client, log)
    assert ended["state"] == "final"
    llm.enqueue(reply("gamma again"))
    run = str((await client.call("chat.send", {"sessionKey": KEY, "message": "q"}))["runId"])
    await log.ended(run)
    [notice] = [p["text"] for p in log.of_run(run, "session.notice")]
    assert notice == "answered by g-1: beta-1 no usable key"


async def test_compaction_does_not_use_a_key_set_aside(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """The first key was rejected (set aside) and the second answers the chat: the
    summariser that compacts the history before the next call asks with the second key
    too, never the rejected one."""
    from gsv_core.agent.compaction import SUMMARISER_SYSTEM

    await use_pool(client, llm)
    llm.enqueue(real.OPENAI_BAD_KEY, reply("A" * 3000))
    first = await client.call("chat.send", {"sessionKey": KEY, "message": "x" * 3000})
    assert (await log.ended(str(first["runId"])))["state"] == "final"
    await configure(client, {"model.contextWindow": 2000, "compaction.reserveTokens": 400,
                             "compaction.keepRecentTokens": 200})  # fmt: skip
    llm.enqueue(reply("<summary>They talked about x.</summary>"), reply("fresh answer"))
    assert (await turn(client, log))["state"] == "final"
    summarised = [n for n, r in enumerate(llm.requests)
                  if SUMMARISER_SYSTEM in json.dumps(r.body)]  # fmt: skip
    assert summarised, "the history was compacted"
    assert [keys_used(llm)[n] for n in summarised] == [K2] * len(summarised)
