"""The session methods (docs/protocol.md#methods) on a real gateway: shapes, bad input, fresh keys."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


async def chat(client: GatewayClient, log: EventLog, text: str, key: str = KEY) -> dict[str, Any]:
    run = (await send(client, text, key=key))["runId"]
    return await log.ended(run)


async def test_a_fresh_key_reports_its_real_key_and_is_not_listed(client: GatewayClient) -> None:
    """session.get on a never-used key: its canonical key, no messages, not listed (its
    id is fixed: test_session_id_fixed.py)."""
    got = await client.call("session.get", {"sessionKey": "agent:ops:main"})
    assert got["sessionKey"] == "agent:ops:main" and got["messageCount"] == 0
    assert got["tokens"] == {"input": 0, "output": 0, "total": 0}
    assert got["resetPolicy"] == {"mode": "daily", "atHour": 4}
    assert (await client.call("sessions.list"))["count"] == 0


async def test_get_stats_history_and_preview_after_a_turn(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """The four read methods describe the same session consistently."""
    await chat(client, log, "hello")
    got = await client.call("session.get", {"sessionKey": "main"})
    assert got["sessionKey"] == KEY and got["messageCount"] == 2 and got["kind"] == "chat"
    assert got["tokens"] == {"input": 10, "output": 5, "total": 15}
    stats = await client.call("session.stats", {"sessionKey": KEY})
    assert stats["isProcessing"] is False and stats["queueSize"] == 0
    assert stats["sessionId"] == got["sessionId"] and stats["uptime"] >= 0
    history = await client.call("session.history", {"sessionKey": KEY})
    assert history == {
        "sessionKey": KEY,
        "currentSessionId": got["sessionId"],
        "previousSessionIds": [],
    }
    preview = await client.call("session.preview", {"sessionKey": KEY, "limit": 1})
    assert preview["messageCount"] == 2 and [m["role"] for m in preview["messages"]] == [
        "assistant"
    ]


async def test_sessions_list_is_sorted_by_activity_with_kinds(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Newest activity first, with `kind` (cron and heartbeat sessions listed
    too), paginated with a total count."""
    await chat(client, log, "one", key="agent:main:first")
    await chat(client, log, "beat", key="agent:main:heartbeat:system:internal")
    await chat(client, log, "two", key="agent:main:cron:job1:run1")
    listed = await client.call("sessions.list", {"limit": 1})
    assert listed["count"] == 3
    assert [s["sessionKey"] for s in listed["sessions"]] == ["agent:main:cron:job1:run1"]
    assert listed["sessions"][0]["kind"] == "cron" and listed["sessions"][0]["messageCount"] == 2
    rest = await client.call("sessions.list", {"offset": 1})
    assert [(s["sessionKey"], s["kind"]) for s in rest["sessions"]] == [
        ("agent:main:heartbeat:system:internal", "heartbeat"),
        ("agent:main:first", "chat"),
    ]


async def test_patch_merges_settings_label_and_reset_policy(client: GatewayClient) -> None:
    """Settings merge (model field by field), the label is replaced, the policy merged."""
    await client.call(
        "session.patch",
        {"sessionKey": KEY, "settings": {"model": {"provider": "openai", "id": "a"}}},
    )
    await client.call(
        "session.patch",
        {"sessionKey": KEY, "settings": {"model": {"id": "b"}, "thinkingLevel": "low"}, "label": "work",
         "resetPolicy": {"mode": "idle", "idleMinutes": 30}},
    )  # fmt: skip
    got = await client.call("session.get", {"sessionKey": KEY})
    assert got["settings"] == {"model": {"provider": "openai", "id": "b"}, "thinkingLevel": "low"}
    assert got["label"] == "work"
    assert got["resetPolicy"] == {"mode": "idle", "atHour": 4, "idleMinutes": 30}
    listed = await client.call("sessions.list")
    assert listed["sessions"][0]["label"] == "work"


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("session.get", {}, "sessionKey"),
        ("session.get", {"sessionKey": "a b"}, "sessionKey"),
        (
            "session.patch",
            {"sessionKey": KEY, "settings": {"thinkingLevel": "loud"}},
            "thinkingLevel",
        ),
        ("session.patch", {"sessionKey": KEY, "resetPolicy": {"atHour": 25}}, "atHour"),
        ("session.compact", {"sessionKey": KEY, "keepMessages": 0}, "keepMessages"),
        ("sessions.list", {"limit": 0}, "limit"),
        ("session.preview", {"sessionKey": KEY, "limit": -1}, "limit"),
    ],
)
async def test_bad_input_gets_400_naming_the_problem(
    client: GatewayClient, method: str, params: dict[str, Any], field: str
) -> None:
    """Malformed keys and values are refused with a message naming what is wrong."""
    with pytest.raises(InvalidParams) as refused:
        await client.call(method, params)
    assert field.lower() in refused.value.message.lower()


async def test_reset_archives_the_transcript_and_clears_tokens(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """session.reset: ResetResult, a readable archive holding every message, a new id."""
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("done")
    await chat(client, log, "hello")
    before = await client.call("session.get", {"sessionKey": KEY})
    reset = await client.call("session.reset", {"sessionKey": KEY})
    assert (
        reset["oldSessionId"] == before["sessionId"]
        and reset["newSessionId"] != before["sessionId"]
    )
    assert reset["archivedMessages"] == 4 and reset["tokensCleared"]["total"] == 30
    archive = Path(gw.gateway.db.path).parent / "workspace" / reset["archivedTo"]
    with gzip.open(archive, "rt") as fh:
        lines = [json.loads(line) for line in fh]
    assert lines[0]["meta"]["sessionId"] == before["sessionId"]
    assert [m["role"] for m in lines[1:]] == ["user", "assistant", "toolResult", "assistant"]
    after = await client.call("session.get", {"sessionKey": KEY})
    assert after["messageCount"] == 0 and after["previousSessionIds"] == [before["sessionId"]]
    assert after["tokens"]["total"] == 0


async def test_compact_keeps_tool_calls_with_their_results(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Keeping 2 messages would start with a tool result: the cut moves to keep its call
    with it."""
    fake.enqueue(call("gsv__ConfigGet", {}))
    fake.enqueue("done")
    await chat(client, log, "hello")  # user, assistant(call), toolResult, assistant
    result = await client.call("session.compact", {"sessionKey": KEY, "keepMessages": 2})
    assert result["trimmedMessages"] == 1 and result["keptMessages"] == 3
    preview = await client.call("session.preview", {"sessionKey": KEY})
    assert [m["role"] for m in preview["messages"]] == ["assistant", "toolResult", "assistant"]
    assert result["archivedTo"].startswith("agents/main/sessions/")


async def test_compact_is_refused_during_a_run(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Compacting under a running agent would race it: 409 with a clear message."""
    import asyncio

    from gsv_core.errors import Conflict

    gate = asyncio.Event()
    fake.enqueue(gate)
    await send(client, "busy")
    with pytest.raises(Conflict, match="run is in progress"):
        await client.call("session.compact", {"sessionKey": KEY})
    gate.set()


async def test_get_names_the_model_the_next_message_will_use(client: GatewayClient) -> None:
    """`effectiveModel`: config `model` < the agent's own model < the session's setting <
    a directive-only message's model (kept for the next message)."""

    async def next_model(key: str = "agent:ops:main") -> str:
        got = (await client.call("session.get", {"sessionKey": key}))["effectiveModel"]
        return f"{got['provider']}/{got['id']}"

    await client.call("config.set", {"path": "model", "value": {"provider": "p", "id": "m1"}})
    assert await next_model() == "p/m1"
    agents = [{"id": "main", "default": True}, {"id": "ops", "model": "openai/gpt-ops"}]
    await client.call("config.set", {"path": "agents.list", "value": agents})
    assert await next_model() == "openai/gpt-ops" and await next_model(KEY) == "p/m1"
    await send(client, "/model openai/o3", key="agent:ops:main")
    assert await next_model() == "openai/o3"
    await send(client, "/model:anthropic/opus", key="agent:ops:main")
    assert await next_model() == "anthropic/opus"
