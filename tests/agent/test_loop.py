"""The agent loop on a real gateway with a scripted model: streaming, tools, the queue,
limits, /stop and errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gsv_core.agent.run import too_many_steps
from gsv_core.client import Backoff
from gsv_core.client import GatewayClient
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.waiting import until


async def history(gw: RunningGateway, key: str = KEY) -> list[dict[str, Any]]:
    return await gw.gateway.sessions.store.messages(key)


async def test_a_reply_streams_as_deltas_then_final(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Each provider delta becomes a `delta` event in order; `final` carries the message."""
    fake.enqueue("Hel", "lo ", "there")
    started = await send(client, "hi")
    assert started["status"] == "started"
    assert "queued" not in started and "queuePosition" not in started
    final = await log.ended(started["runId"])
    deltas = [p["text"] for p in log.of_run(started["runId"]) if p["state"] == "delta"]
    assert deltas == ["Hel", "lo ", "there"]
    assert final["state"] == "final" and final["sessionKey"] == KEY
    assert final["message"]["content"] == [{"type": "text", "text": "Hello there"}]
    assert final["usage"] == {"input": 10, "output": 5, "total": 15}
    stored = await history(gw)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["content"] == "hi"


async def test_the_user_message_is_stored_before_chat_send_answers(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider
) -> None:
    """When chat.send returns, the message is already in the session's history."""
    gate = asyncio.Event()
    fake.enqueue(gate)
    await send(client, "remember me")
    assert [m["content"] for m in await history(gw)] == ["remember me"]
    gate.set()


async def test_tool_calls_run_and_their_results_feed_the_next_call(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A native tool call is executed, stored, shown as chat.tool events, and given back."""
    fake.enqueue("Checking.", call("gsv__ConfigGet", {"path": "model.provider"}, "c1"))
    fake.enqueue("It is anthropic.")
    run = (await send(client, "which provider?"))["runId"]
    final = await log.ended(run)
    assert final["state"] == "final"
    assert log.states(run).count("partial") == 1
    phases = [(p["tool"]["name"], p["tool"]["phase"]) for p in log.of_run(run, "chat.tool")]
    assert phases == [("gsv__ConfigGet", "start"), ("gsv__ConfigGet", "end")]
    second = fake.requests[1].messages
    assert [m["role"] for m in second] == ["user", "assistant", "toolResult"]
    assert second[2]["toolCallId"] == "c1" and not second[2]["isError"]
    assert '"value": "anthropic"' in second[2]["content"][0]["text"]


async def test_unknown_tools_become_error_results_the_model_reads(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A made-up tool name does not crash the run: the model gets an error result."""
    fake.enqueue(call("ghost__Read", {}), call("gsv__Nope", {}))
    fake.enqueue("sorry")
    run = (await send(client, "go"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    results = [m for m in fake.requests[1].messages if m["role"] == "toolResult"]
    assert [r["isError"] for r in results] == [True, True]
    assert results[0]["content"][0]["text"] == "Error: No node provides tool: ghost__Read"
    assert results[1]["content"][0]["text"] == "Error: Unknown native tool: gsv__Nope"


async def test_bad_native_tool_arguments_are_an_error_result(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Arguments that fail validation come back as "Invalid arguments: ..."."""
    fake.enqueue(call("gsv__LogsGet", {"lines": -5}))
    fake.enqueue("ok")
    run = (await send(client, "logs"))["runId"]
    await log.ended(run)
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    assert result["isError"] and result["content"][0]["text"].startswith(
        "Error: Invalid arguments: lines"
    )


async def test_messages_during_a_run_are_queued_and_answered_in_order(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """B and C arrive while A runs: both are acknowledged as queued and answered after A."""
    gate = asyncio.Event()
    fake.enqueue("A", gate)
    fake.enqueue("B reply")
    fake.enqueue("C reply")
    a = await send(client, "A")
    b = await send(client, "B")
    c = await send(client, "C")
    assert (b["queued"], b["queuePosition"]) == (True, 1)
    assert (c["queued"], c["queuePosition"]) == (True, 2)
    gate.set()
    for run in (a, b, c):
        assert (await log.ended(run["runId"]))["state"] == "final"
    finals = [
        p["message"]["content"][0]["text"]
        for n, p in log.events
        if n == "chat" and p["state"] == "final"
    ]
    assert finals == ["A", "B reply", "C reply"]
    assert [m["content"] for m in await history(gw) if m["role"] == "user"] == ["A", "B", "C"]


async def test_a_model_that_calls_tools_forever_stops_at_max_tool_steps(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A model answering every request with a tool call is stopped after
    agent.maxToolSteps steps, with a message that says why and how to allow more."""
    await client.call("config.set", {"path": "agent.maxToolSteps", "value": 3})
    fake.by_system[""] = [call("gsv__ConfigGet", {})]  # every request: one more tool call
    run = (await send(client, "loop"))["runId"]
    ended = await log.ended(run)
    assert ended["state"] == "error"
    assert ended["error"] == too_many_steps(3)
    assert "after 3 steps of tool calls" in ended["error"]
    assert "`gsv config set agent.maxToolSteps N`" in ended["error"]
    assert len(fake.requests) == 3
    assert len([m for m in await history(gw) if m["role"] == "toolResult"]) == 3


async def test_the_deprecated_max_iterations_still_limits_a_run(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """agent.maxIterations, the old name, still works (and reads as agent.maxToolSteps);
    setting agent.maxToolSteps afterwards replaces it."""
    await client.call("config.set", {"path": "agent.maxIterations", "value": 2})
    assert (await client.call("config.get", {"path": "agent.maxToolSteps"}))["value"] == 2
    fake.by_system[""] = [call("gsv__ConfigGet", {})]
    ended = await log.ended((await send(client, "loop"))["runId"])
    assert ended["error"] == too_many_steps(2) and len(fake.requests) == 2
    await client.call("config.set", {"path": "agent.maxToolSteps", "value": 4})
    agent = (await client.call("config.get", {"path": "agent"}))["value"]
    assert agent == {"maxToolSteps": 4}
    ended = await log.ended((await send(client, "loop again"))["runId"])
    assert ended["error"] == too_many_steps(4) and len(fake.requests) == 2 + 4


async def test_stop_mid_stream_cancels_and_the_next_run_is_unaffected(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """/stop ends the run at once; nothing of it is stored later; the queued message runs."""
    gate = asyncio.Event()
    fake.enqueue("partial text", gate, " never seen")
    fake.enqueue("second answer")
    first = (await send(client, "first"))["runId"]
    await log.wait(lambda: "delta" in log.states(first), "the first delta")
    second = (await send(client, "second"))["runId"]
    stopped = await send(client, "/stop")
    assert stopped == {"status": "command", "command": "stop", "response": f"Stopped run {first}."}
    assert (await log.ended(first))["error"] == "Run cancelled by user"
    gate.set()  # the cancelled stream could only continue now: it must not
    assert (await log.ended(second))["state"] == "final"
    stored = await history(gw)
    assert [m["role"] for m in stored] == ["user", "user", "assistant"]
    assert all("never seen" not in str(m) for m in stored)
    assert log.states(first).count("final") == 0


async def test_stop_without_a_run_says_so(client: GatewayClient) -> None:
    """/stop when idle answers "No run in progress."."""
    assert (await send(client, "/stop"))["response"] == "No run in progress."


async def test_provider_errors_end_the_run_with_an_error_event(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A provider failure becomes an `error` event with its message; the session goes on."""
    fake.enqueue(Fail(ProviderFailed("anthropic is overloaded")))
    run = (await send(client, "hi"))["runId"]
    assert (await log.ended(run))["error"] == "anthropic is overloaded"
    again = (await send(client, "again"))["runId"]
    assert (await log.ended(again))["state"] == "final"


async def test_a_slow_model_hits_the_llm_timeout(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """timeouts.llmMs bounds one model call with a clear error."""
    await client.call("config.set", {"path": "timeouts.llmMs", "value": 1000})
    fake.enqueue("thinking", asyncio.Event())  # never set
    run = (await send(client, "hi"))["runId"]
    ended = await log.ended(run)
    assert ended["state"] == "error" and "timeouts.llmMs" in ended["error"]


async def test_a_missing_api_key_tells_the_user_the_command(tmp_path: Any) -> None:
    """With no key for the configured provider the error names `gsv config set`."""
    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve

    config = ServerConfig(database=tmp_path / "k" / "gsv.db")
    async with (
        serve(config, port=0) as running,
        GatewayClient(running.url, token=running.token) as c,
    ):
        events = EventLog(c)
        await c.call(
            "config.set", {"path": "model", "value": {"provider": "openrouter", "id": "x"}}
        )
        run = (await send(c, "hi"))["runId"]
        ended = await events.ended(run)
        await events.close()
    assert ended["state"] == "error"
    assert "gsv config set apiKeys.openrouter" in ended["error"]


async def test_session_keys_are_canonicalised(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """ "main" and the CLI's DM key land in the same canonical main session."""
    one = await send(client, "x", key="main")
    await log.ended(one["runId"])
    two = await send(client, "y", key="agent:main:cli:dm:main")
    final = await log.ended(two["runId"])
    assert final["sessionKey"] == "agent:main:main"
    assert len(await history(gw)) == 4


async def test_bad_session_keys_get_400(client: GatewayClient) -> None:
    """Whitespace inside a key, or a blank key, is refused with a clear 400."""
    from gsv_core.errors import InvalidParams

    for key in ("agent:main:a b", "   "):
        try:
            await send(client, "hi", key=key)
        except InvalidParams as exc:
            assert "session key" in exc.message.lower() or "sessionKey" in exc.message
        else:
            raise AssertionError(f"{key!r} was accepted")


async def test_reset_mid_stream_ends_the_run_and_the_new_session_starts_clean(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """session.reset during a streamed reply ends that run with an error event; nothing of
    it lands in the new session, whose next message runs with a clean
    history."""
    gate = asyncio.Event()
    fake.enqueue("half a reply", gate, " never stored")
    fake.enqueue("fresh answer")
    first = (await send(client, "first"))["runId"]
    await log.wait(lambda: "delta" in log.states(first), "the first delta")
    old_id = (await client.call("session.get", {"sessionKey": KEY}))["sessionId"]
    reset = await client.call("session.reset", {"sessionKey": KEY})
    assert reset["oldSessionId"] == old_id and reset["newSessionId"] != old_id
    assert (await log.ended(first))["state"] == "error"
    gate.set()  # the cancelled stream could only go on now: it must not
    second = (await send(client, "second"))["runId"]
    assert (await log.ended(second))["state"] == "final"
    stored = await history(gw)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["content"] == "second" and "fresh answer" in str(stored[1]["content"])
    assert all("never stored" not in str(m) for m in stored)
    assert len(fake.requests[-1].messages) == 1, "the model saw only the new message"


async def test_logs_get_returns_the_node_log(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """gsv__LogsGet fetches the last lines of the only connected node's log file."""
    log_file = tmp_path / "node.log"
    log_file.write_text("".join(f"line {i}\n" for i in range(1, 8)))
    settings = NodeSettings(url=gw.url, node_id="n1", workspace=tmp_path, log_file=log_file,
                            backoff=Backoff(base=0.05, cap=0.2), owner_token=gw.token)  # fmt: skip
    daemon = NodeDaemon(settings)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        await asyncio.wait_for(daemon.connected.wait(), 30)
        fake.enqueue(call("gsv__LogsGet", {"lines": 3}))
        fake.enqueue("Read the log.")
        run = (await send(client, "show the node log"))["runId"]
        assert (await log.ended(run))["state"] == "final"
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    text = result["content"][0]["text"]
    assert not result["isError"]
    assert "line 5" in text and "line 7" in text and "line 4" not in text


async def test_a_run_is_open_in_the_store_until_its_final_reply_closes_it(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A run's row (what a restart resumes) is there while the run works, through its
    tool steps, and goes in the same write as its final reply: a restart after that
    write finds the reply stored and nothing to resume."""
    store = gw.gateway.sessions.store
    release = asyncio.Event()
    fake.enqueue("Checking.", call("gsv__ConfigGet", {"path": "model.provider"}, "c1"))
    fake.enqueue(release, "Done.")  # the second step waits until released
    run = (await send(client, "go"))["runId"]
    await until(lambda: len(fake.requests) == 2, "the second model call")
    open_runs, _ = await store.recovery_state()
    assert open_runs == [(run, KEY)]
    release.set()
    assert (await log.ended(run))["state"] == "final"
    open_runs, _ = await store.recovery_state()
    assert open_runs == []
    stored = await history(gw)
    assert [m["role"] for m in stored] == ["user", "assistant", "toolResult", "assistant"]
    assert stored[-1]["content"][0]["text"] == "Done."
