"""heartbeat.* over a real gateway with the scripted model and a moved clock: no model
call while HEARTBEAT.md holds no task, one call with a task, exact HEARTBEAT_OK held
back, alerts delivered to the main session's clients or the last channel peer, manual
triggers, live config, and 400/404 errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol import events
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider
from tests.heartbeat.conftest import MINUTE
from tests.heartbeat.conftest import START
from tests.heartbeat.conftest import Clock
from tests.heartbeat.conftest import eventually

TASK = "# Heartbeat checklist\n\n- Check whether the nightly backup succeeded.\n"
HEARTBEAT_KEY = "agent:main:heartbeat:system:internal"


@pytest.fixture
async def notices(client: GatewayClient) -> AsyncIterator[list[dict[str, Any]]]:
    """Every `session.notice` payload the client receives."""
    seen: list[dict[str, Any]] = []

    async def collect() -> None:
        async for frame in client.events():
            if frame.event == events.SESSION_NOTICE and isinstance(frame.payload, dict):
                seen.append(frame.payload)

    task = asyncio.create_task(collect())
    yield seen
    task.cancel()


async def write_checklist(client: GatewayClient, content: str) -> None:
    await client.call("workspace.write", {"path": "HEARTBEAT.md", "content": content})


async def status(client: GatewayClient) -> dict[str, Any]:
    state: dict[str, Any] = (await client.call("heartbeat.status"))["agents"]["main"]
    return state


async def scheduled_beat(
    gw: RunningGateway, client: GatewayClient, clock: Clock, ms: int = 30 * MINUTE
) -> dict[str, Any]:
    """Move the clock to the next beat, wake the timer, wait for the beat's result."""
    before = (await status(client)).get("lastResult")
    clock.advance(ms)
    gw.gateway.heartbeat.wake()

    async def ended() -> dict[str, Any] | None:
        state = await status(client)
        result = state.get("lastResult")
        return result if result != before and not state["running"] else None

    result: dict[str, Any] = await eventually(ended, "the scheduled beat")
    return result


async def test_the_template_checklist_makes_no_model_call(
    gw: RunningGateway, client: GatewayClient, clock: Clock, fake: FakeProvider
) -> None:
    """A new agent's HEARTBEAT.md (title and comments) skips the beat: zero requests."""
    result = await scheduled_beat(gw, client, clock)
    assert (result["status"], result["skipReason"]) == ("skipped", "empty_heartbeat_file")
    assert fake.requests == []
    state = await status(client)
    assert state["lastHeartbeatAt"] is None
    assert state["nextHeartbeatAt"] == START + 60 * MINUTE


@pytest.mark.parametrize("content", ["", "# Heartbeat\n\n## Morning\n<!-- later -->\n- \n"])
async def test_an_empty_checklist_makes_no_model_call(
    gw: RunningGateway, client: GatewayClient, clock: Clock, fake: FakeProvider, content: str
) -> None:
    """An empty or headings-and-comments HEARTBEAT.md skips the beat: zero requests."""
    await write_checklist(client, content)
    result = await scheduled_beat(gw, client, clock)
    assert result["skipReason"] == "empty_heartbeat_file"
    assert fake.requests == []


async def test_a_missing_checklist_makes_no_model_call(
    gw: RunningGateway, client: GatewayClient, clock: Clock, fake: FakeProvider
) -> None:
    """No HEARTBEAT.md: skipped with no_heartbeat_file."""
    await write_checklist(client, TASK)  # seeds the workspace, then the file goes
    await client.call("workspace.delete", {"path": "HEARTBEAT.md"})
    result = await scheduled_beat(gw, client, clock)
    assert result["skipReason"] == "no_heartbeat_file"
    assert fake.requests == []


async def test_a_real_checklist_makes_one_call_and_holds_back_heartbeat_ok(
    gw: RunningGateway,
    client: GatewayClient,
    clock: Clock,
    fake: FakeProvider,
    notices: list[dict[str, Any]],
) -> None:
    """A task in HEARTBEAT.md: one model call in the heartbeat session, with the
    checklist in its prompt; an exact HEARTBEAT_OK reply is not delivered."""
    await write_checklist(client, TASK)
    fake.enqueue("HEARTBEAT_OK")
    result = await scheduled_beat(gw, client, clock)
    assert result == {"at": START + 30 * MINUTE, "trigger": "interval", "status": "ok",
                      "heldBack": "heartbeat_ok", "delivered": False}  # fmt: skip
    assert len(fake.requests) == 1
    request = fake.requests[0]
    assert "Check whether the nightly backup succeeded." in request.system
    assert (await status(client))["lastHeartbeatAt"] == START + 30 * MINUTE
    history = await gw.gateway.sessions.store.messages(HEARTBEAT_KEY)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert notices == []


@pytest.mark.parametrize(
    "reply", ["The nightly backup failed.", "HEARTBEAT_OK but the disk is 95% full"]
)
async def test_an_alert_reaches_the_main_session_clients(
    gw: RunningGateway,
    client: GatewayClient,
    clock: Clock,
    fake: FakeProvider,
    notices: list[dict[str, Any]],
    reply: str,
) -> None:
    """Any reply other than exactly HEARTBEAT_OK is delivered, here as a notice to the
    clients of agent:main:main (no channel has been active)."""
    await write_checklist(client, TASK)
    fake.enqueue(reply)
    result = await scheduled_beat(gw, client, clock)
    assert result["delivered"] is True and result["deliveredTo"] == "agent:main:main"
    await eventually(lambda: notices, "the notice")
    assert notices == [{"sessionKey": "agent:main:main", "kind": "heartbeat", "text": reply,
                        "details": {"agentId": "main", "heartbeatSessionKey": HEARTBEAT_KEY}}]  # fmt: skip
    state = await status(client)
    assert (state["lastHeartbeatText"], state["lastHeartbeatSentAt"]) == (
        reply, START + 30 * MINUTE)  # fmt: skip


async def test_an_alert_goes_to_the_last_channel_peer(
    gw: RunningGateway, client: GatewayClient, clock: Clock, fake: FakeProvider
) -> None:
    """With target `last`, an alert goes to the owner the agent last heard from."""
    value = {"dmPolicy": "open", "owners": ["u1"]}
    await client.call("config.set", {"path": "channels.test", "value": value})
    await client.call("channel.start", {"channel": "test"})
    channel = gw.gateway.channels.adapters["test"]
    assert isinstance(channel, TestChannel)
    fake.enqueue("hi Ann")
    await channel.inject(InboundMessage(
        channel="test", account_id="default", peer=Peer("dm", "u1", name="Ann"),
        message_id="m1", text="hello", sender=Sender("u1", "Ann")))  # fmt: skip
    await eventually(lambda: channel.texts("u1") == ["hi Ann"], "the chat reply")
    main = gw.gateway.sessions.loaded("agent:main:main")
    await eventually(lambda: main is not None and not main.processing, "the run's end")
    await write_checklist(client, TASK)
    fake.enqueue("The nightly backup failed.")
    result = await scheduled_beat(gw, client, clock)
    assert result["deliveredTo"] == "test:default:u1"
    assert channel.texts("u1") == ["hi Ann", "The nightly backup failed."]
    last = (await status(client))["lastActive"]
    assert (last["channel"], last["peer"]["id"]) == ("test", "u1")


async def test_outside_active_hours_makes_no_model_call(
    gw: RunningGateway, client: GatewayClient, clock: Clock, fake: FakeProvider
) -> None:
    """Active hours in userTimezone: 18:30 UTC is 03:30 in Tokyo, outside 08:00-23:00."""
    await write_checklist(client, TASK)
    await client.call("config.set", {"path": "userTimezone", "value": "Asia/Tokyo"})
    result = await scheduled_beat(gw, client, clock)
    assert result["skipReason"] == "outside_active_hours"
    assert fake.requests == []


async def test_a_busy_main_session_skips_the_beat(
    gw: RunningGateway, client: GatewayClient, clock: Clock, fake: FakeProvider
) -> None:
    """While the person's session is running, the beat is skipped: session_busy."""
    await write_checklist(client, TASK)
    gate = asyncio.Event()
    fake.enqueue("thinking...", gate)
    await client.call("chat.send", {"sessionKey": "agent:main:main", "message": "hi",
                                    "idempotencyKey": "k1"})  # fmt: skip
    await eventually(fake.streaming.is_set, "the chat run")
    result = await scheduled_beat(gw, client, clock)
    assert result["skipReason"] == "session_busy"
    assert len(fake.requests) == 1  # the chat's own call only
    gate.set()


async def test_a_manual_trigger_skips_the_checks(
    client: GatewayClient, fake: FakeProvider, notices: list[dict[str, Any]]
) -> None:
    """heartbeat.trigger runs even with the template checklist, and says where."""
    fake.enqueue("All quiet, but the certificate expires tomorrow.")
    result = await client.call("heartbeat.trigger", {})
    assert result == {
        "ok": True, "skipped": False, "sessionKey": HEARTBEAT_KEY, "delivered": True,
        "message": f"Heartbeat triggered for agent main (session: {HEARTBEAT_KEY})",
        "reply": "All quiet, but the certificate expires tomorrow.",
        "deliveredTo": "agent:main:main",
    }  # fmt: skip
    assert len(fake.requests) == 1
    fake.enqueue("HEARTBEAT_OK")
    quiet = await client.call("heartbeat.trigger", {"agentId": "main"})
    assert (quiet["delivered"], quiet["heldBack"]) == (False, "heartbeat_ok")
    last = (await status(client))["lastResult"]
    assert (last["trigger"], last["heldBack"]) == ("manual", "heartbeat_ok")


async def test_a_failed_trigger_says_why(client: GatewayClient, fake: FakeProvider) -> None:
    """A run that fails: ok false and the spec's message."""
    fake.enqueue(Fail(ProviderFailed("the model is down")))
    result = await client.call("heartbeat.trigger", {"agentId": "main"})
    assert result["ok"] is False
    assert result["message"].startswith("Heartbeat failed for agent main: ")
    assert "the model is down" in result["message"]


async def test_config_changes_apply_without_a_restart(client: GatewayClient, clock: Clock) -> None:
    """config.set of the interval moves the next beat at once, without a restart."""
    await client.call("config.set", {"path": "agents.defaultHeartbeat.every", "value": "5m"})
    state = await status(client)
    assert (state["every"], state["nextHeartbeatAt"]) == ("5m", START + 5 * MINUTE)
    await client.call("config.set", {"path": "agents.defaultHeartbeat.every", "value": "off"})
    assert (await status(client))["nextHeartbeatAt"] is None
    with pytest.raises(InvalidParams, match=r"agents\.defaultHeartbeat\.every"):
        await client.call("config.set", {"path": "agents.defaultHeartbeat.every", "value": "soon"})
    assert (await status(client))["nextHeartbeatAt"] is None, "the refused value changed nothing"
    ops = [{"id": "main", "heartbeat": {"every": "soon"}}]  # list entries are checked per agent
    await client.call("config.set", {"path": "agents.list", "value": ops})
    assert "every: cannot read 'soon'" in (await status(client))["error"]
    await client.call("config.set", {"path": "agents.list", "value": [{"id": "ops"}]})
    assert list((await client.call("heartbeat.status"))["agents"]) == ["ops"]


async def test_start_reschedules_from_now(client: GatewayClient, clock: Clock) -> None:
    """heartbeat.start: the seed's message, and next beats one interval from now."""
    clock.advance(10 * MINUTE)
    result = await client.call("heartbeat.start")
    assert result["message"] == "Heartbeat scheduler started"
    assert result["agents"]["main"]["nextHeartbeatAt"] == START + 40 * MINUTE
    one = await client.call("heartbeat.start", {"agentId": "main"})
    assert list(one["agents"]) == ["main"]


@pytest.mark.parametrize(
    ("method", "params", "error", "text"),
    [
        ("heartbeat.trigger", {"agentId": 5}, InvalidParams, "agentId"),
        ("heartbeat.trigger", {"agentId": ""}, InvalidParams, "agentId"),
        ("heartbeat.trigger", {"agentId": "bad id!"}, InvalidParams, "invalid agentId"),
        ("heartbeat.trigger", {"agentId": "ops"}, NotFound, "no heartbeat for agent 'ops'"),
        ("heartbeat.status", {"agentId": "nobody"}, NotFound, "heartbeats run for main"),
        ("heartbeat.status", [1, 2], InvalidParams, "invalid params for heartbeat.status"),
        ("heartbeat.start", {"agentId": "ops"}, NotFound, "no heartbeat for agent 'ops'"),
    ],
)
async def test_bad_params_are_clear_errors(
    client: GatewayClient, method: str, params: Any, error: type[Exception], text: str
) -> None:
    """Bad agent ids are 400s naming the field; unknown agents 404s naming the known."""
    with pytest.raises(error, match=text):
        await client.call(method, params)
