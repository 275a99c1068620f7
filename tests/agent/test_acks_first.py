"""Acks before run work (gsv_core/agent/ack_first.py, issue 41): a message is stored and
acknowledged before its run's work, a run blocked on its model holds up nobody else,
and a message once acknowledged stays in the history whatever its run does. A real
gateway whose model is the fake LLM server, reached through the official OpenAI SDK."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.agent.conftest import EventLog
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import Hang
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.waiting import WAIT
from tests.wire import connect_minimal
from tests.wire import owner_token


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


@pytest.fixture
async def gw(tmp_path: Path, llm: FakeLLMServer) -> AsyncIterator[RunningGateway]:
    async with serve(ServerConfig(database=tmp_path / "data" / "gsv.db"), port=0) as running:
        async with GatewayClient(running.url, token=running.token) as client:
            provider = {"api": "openai", "baseUrl": llm.openai_base_url}
            await client.call("config.set", {"path": "providers.fake", "value": provider})
            model = {"provider": "fake", "id": "fake-1"}
            await client.call("config.set", {"path": "model", "value": model})
        yield running  # the conftest's `client` and `log` fixtures use this gateway


async def until(predicate: Any, what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0.01)
    assert predicate(), what


async def test_a_run_blocked_on_its_model_holds_up_no_other_session_or_request(
    gw: RunningGateway, llm: FakeLLMServer, client: GatewayClient, log: EventLog
) -> None:
    """While one run waits for a model that does not answer, a message to another
    session is acknowledged and answered, and config.get on a third connection too."""
    llm.enqueue(Hang(), reply("Second", " answer."))
    held = await client.call("chat.send", {"sessionKey": "held", "message": "first"})
    await until(lambda: len(llm.requests) == 1, "the first run to call its model")
    async with (
        GatewayClient(gw.url, token=gw.token) as other,
        GatewayClient(gw.url, token=gw.token) as reader,
    ):
        sent = await other.call("chat.send", {"sessionKey": "free", "message": "second"})
        assert sent == {"status": "started", "runId": sent["runId"]}
        model = await reader.call("config.get", {"path": "model"})
        assert model["value"] == {"provider": "fake", "id": "fake-1"}
        ended = await log.ended(sent["runId"])
    assert ended["state"] == "final"
    assert ended["message"]["content"][0]["text"] == "Second answer."
    assert log.states(held["runId"]) == []  # the first run is still waiting for its model


async def test_the_ack_comes_before_every_event_of_its_run(gw: RunningGateway) -> None:
    """Read in the order the socket delivers: each chat.send's response comes before the
    first event of the run it started, for messages sent together to several sessions."""
    ws = await connect_minimal(gw.url, {"id": "order", "mode": "client"},
                               auth={"token": owner_token()})  # fmt: skip
    try:
        frames = await _send_together(ws, [f"order-{n}" for n in range(5)])
    finally:
        await ws.close()
    for frame_id, run_id in frames["runs"].items():
        acked_at = frames["order"].index(("res", frame_id))
        first_event = next(i for i, seen in enumerate(frames["order"]) if seen == ("evt", run_id))
        assert acked_at < first_event, frames["order"]


async def _send_together(ws: ClientConnection, keys: list[str]) -> dict[str, Any]:
    """Send one chat.send per session key at once; read until every run has ended.
    Returns the frames in order, as ("res", frame id) or ("evt", run id), and the run id
    each request started."""
    ids = {str(uuid.uuid4()): key for key in keys}
    for frame_id, key in ids.items():
        params = {"sessionKey": key, "message": "hello"}
        await ws.send(json.dumps({"type": "req", "id": frame_id, "method": "chat.send",
                                  "params": params}))  # fmt: skip
    order: list[tuple[str, str]] = []
    runs: dict[str, str] = {}
    ended: set[str] = set()
    async with asyncio.timeout(WAIT):
        while len(ended) < len(ids):
            frame = json.loads(await ws.recv())
            if frame["type"] == "res" and frame["id"] in ids:
                assert frame["ok"], frame
                runs[frame["id"]] = frame["payload"]["runId"]
                order.append(("res", frame["id"]))
            elif frame["type"] == "evt" and frame.get("event") == "chat":
                payload = frame["payload"]
                order.append(("evt", payload["runId"]))
                if payload["state"] in ("final", "error"):
                    ended.add(payload["runId"])
    return {"order": order, "runs": runs}


async def test_an_acknowledged_message_stays_in_the_history_when_its_run_fails(
    llm: FakeLLMServer, client: GatewayClient, log: EventLog
) -> None:
    """The ack means stored: a run that then fails leaves the message in the history."""
    llm.enqueue(ErrorReply(400, "this request is refused"))
    sent = await client.call("chat.send", {"sessionKey": "fails", "message": "keep me"})
    assert sent["status"] == "started"
    ended = await log.ended(sent["runId"])
    assert ended["state"] == "error"
    history = await client.call("session.preview", {"sessionKey": "fails"})
    users = [m for m in history["messages"] if m["role"] == "user"]
    assert [m["content"] for m in users] in (["keep me"], [[{"type": "text", "text": "keep me"}]])


async def test_errors_known_before_the_run_are_still_the_acks_answer(
    client: GatewayClient, log: EventLog
) -> None:
    """A bad session key is refused in the ack itself and starts no run: the only run
    that follows is the next, good message's."""
    with pytest.raises(InvalidParams, match="session"):
        await client.call("chat.send", {"sessionKey": "", "message": "hi"})
    sent = await client.call("chat.send", {"sessionKey": "good", "message": "hi"})
    await log.ended(sent["runId"])
    assert {p["runId"] for name, p in log.events if name == "chat"} == {sent["runId"]}
