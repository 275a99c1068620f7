"""Automatic compaction: the pure rules, then proactive and reactive compaction on a real
gateway with a scripted model (summary stored as a summary message, raw messages archived,
tool pairs kept together, a notice, memories written, usage counted)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gsv_core.agent.compaction import SUMMARISER_SYSTEM
from gsv_core.agent.compaction import chunks
from gsv_core.agent.compaction import compaction_cut
from gsv_core.agent.compaction import context_window
from gsv_core.agent.compaction import estimate_text
from gsv_core.agent.compaction import estimate_tokens
from gsv_core.agent.compaction import needs_compaction
from gsv_core.agent.compaction import parse_summary
from gsv_core.agent.compaction import serialise
from gsv_core.client import GatewayClient
from gsv_core.errors import ContextOverflow
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 0}


def assistant(text: str, *calls: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [
        {"type": "toolCall", "id": c, "name": "gsv__ConfigGet", "arguments": {}} for c in calls
    ]
    return {"role": "assistant", "content": content, "timestamp": 0}


def result(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "gsv__ConfigGet",
            "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 0}  # fmt: skip


def test_estimates_grow_with_length_and_count_images() -> None:
    """Longer messages estimate more; an image adds a fixed cost."""
    short, long = estimate_tokens(user("hi")), estimate_tokens(user("hi" * 500))
    assert 0 < short < long
    with_image = {
        **user(""),
        "content": [{"type": "image", "mediaPath": "a/b.png", "mimeType": "image/png"}],
    }
    assert estimate_tokens(with_image) > 1000


def test_needs_compaction_rules() -> None:
    """Short histories never; the real token count wins over a lower estimate."""
    two = [user("a"), assistant("b")]
    assert not needs_compaction(two, 100, 10, 10_000, 0)
    three = [user("a" * 400), assistant("b"), user("c")]
    assert needs_compaction(three, 200, 50, None, 0)
    assert not needs_compaction(three, 10_000, 50, None, 0)
    assert needs_compaction(three, 10_000, 50, 9_990, 0)  # the provider said it is nearly full
    assert needs_compaction(three, 1_000, 50, None, 900)  # the system prompt counts too


def test_the_cut_keeps_tool_calls_with_their_results() -> None:
    """The kept part never starts with a tool result; at least one message is summarised."""
    history = [user("x" * 400), assistant("y", "c1"), result("c1"), assistant("done")]
    cut = compaction_cut(
        history, keep_recent_tokens=estimate_tokens(history[-1]) + estimate_tokens(history[-2])
    )
    assert history[cut]["role"] != "toolResult" and cut >= 1
    assert cut == 1  # moved back to keep the call with its result
    assert compaction_cut([user("a"), assistant("b")], keep_recent_tokens=10**9) == 1
    assert compaction_cut([user("a"), result("c")], keep_recent_tokens=10**9) == 0


def test_chunks_and_serialisation() -> None:
    """Chunks respect the share of the window; tool results are cut at 2000 characters."""
    messages = [user("a" * 400) for _ in range(10)]
    groups = chunks(messages, window=2000)
    assert sum(len(g) for g in groups) == 10 and len(groups) > 1
    text = serialise(result("c", "z" * 5000))
    assert text.startswith("[tool result: gsv__ConfigGet]: ") and text.endswith("[...truncated]")
    assert (
        serialise(assistant("hi", "c1"))
        == "[assistant]: hi\n[assistant tool calls]: gsv__ConfigGet"
    )
    assert parse_summary("<summary>S</summary>\n<memories>M</memories>") == ("S", "M")
    assert parse_summary("no tags") == ("no tags", "")


def test_context_windows_come_from_config_then_known_models() -> None:
    """providers.<name>.contextWindow > model.contextWindow > the known table > default."""
    config: dict[str, Any] = {"model": {"provider": "anthropic", "id": "claude-x", "contextWindow": 50_000},
                              "providers": {"ollama": {"contextWindow": 8192}}}  # fmt: skip
    assert context_window(config, "ollama", "llama3") == 8192
    assert context_window(config, "anthropic", "claude-x") == 50_000
    assert context_window(config, "anthropic", "claude-other") == 200_000
    assert context_window(config, "openai", "gpt-4o-mini") == 128_000
    assert context_window(config, "x", "mystery") == 128_000


async def small_window(client: GatewayClient) -> None:
    for path, value in (("model.contextWindow", 2000), ("compaction.reserveTokens", 400),
                        ("compaction.keepRecentTokens", 200)):  # fmt: skip
        await client.call("config.set", {"path": path, "value": value})


def is_summary_request(request: Any) -> bool:
    return request.system == SUMMARISER_SYSTEM


async def test_a_long_session_is_compacted_before_the_next_call(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Over the budget: older messages become one summary message (stored as a summary,
    not a fake user message), the originals are archived, memories are saved,
    clients get a notice, the model sees the summary."""
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("A" * 3000)
    await log.ended((await send(client, "first " + "x" * 3000))["runId"])
    await small_window(client)  # now the history is over the budget
    fake.by_system[SUMMARISER_SYSTEM] = [
        "<summary>They talked about x.</summary><memories>- likes x</memories>"
    ]
    fake.enqueue("fresh answer")
    run = (await send(client, "second"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    assert any(is_summary_request(r) for r in fake.requests)
    stored = await gw.gateway.sessions.store.messages(KEY)
    assert stored[0]["role"] == "summary" and stored[0]["content"] == "They talked about x."
    assert all(m["role"] != "toolResult" or i > 0 for i, m in enumerate(stored))
    last_request = fake.requests[-1]
    assert last_request.messages[0]["content"].startswith("[Summary of the earlier conversation]")
    notices = [p for n, p in log.events if n == "session.notice" and p["kind"] == "compaction"]
    assert len(notices) == 1
    data_dir = Path(gw.gateway.db.path).parent
    archive = data_dir / "workspace" / notices[0]["details"]["archivedTo"]
    with gzip.open(archive, "rt") as fh:
        archived = [json.loads(line) for line in fh][1:]
    assert archived[0]["content"].startswith("first ")
    assert [m["role"] for m in archived][:3] == ["user", "assistant", "toolResult"]
    memory_files = list((data_dir / "workspace" / "agents" / "main" / "memory").glob("*.md"))
    assert "- likes x" in memory_files[0].read_text()
    got = await client.call("session.get", {"sessionKey": KEY})
    assert got["tokens"]["total"] >= 15 * 4  # the summariser's usage is counted too


async def test_a_context_overflow_compacts_and_retries_once(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """The provider refuses (overflow): one compaction, one retry, then the answer."""
    for text in ("one", "two"):
        fake.enqueue(f"reply {text}")
        await log.ended((await send(client, text))["runId"])
    fake.enqueue(Fail(ContextOverflow("prompt is too long")))
    fake.by_system[SUMMARISER_SYSTEM] = ["<summary>Earlier: one, two.</summary>"]
    fake.enqueue("made it")
    run = (await send(client, "three"))["runId"]
    final = await log.ended(run)
    assert final["state"] == "final" and final["message"]["content"][0]["text"] == "made it"


async def test_a_second_overflow_ends_the_run_with_advice(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """If the retry overflows too, the run ends with an error telling the user to /reset."""
    for text in ("one", "two"):
        fake.enqueue(f"reply {text}")
        await log.ended((await send(client, text))["runId"])
    fake.enqueue(Fail(ContextOverflow("prompt is too long")))
    fake.by_system[SUMMARISER_SYSTEM] = ["<summary>s</summary>"]
    fake.enqueue(Fail(ContextOverflow("prompt is too long")))
    ended = await log.ended((await send(client, "three"))["runId"])
    assert ended["state"] == "error" and "/reset" in ended["error"]


@pytest.mark.parametrize("enabled", [False])
async def test_compaction_can_be_turned_off(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog, enabled: bool
) -> None:
    """With compaction.enabled false an overflow is reported, nothing is summarised."""
    await client.call("config.set", {"path": "compaction.enabled", "value": enabled})
    fake.enqueue("r")
    await log.ended((await send(client, "one"))["runId"])
    fake.enqueue(Fail(ContextOverflow("prompt is too long")))
    ended = await log.ended((await send(client, "two"))["runId"])
    assert ended["state"] == "error"
    assert not any(is_summary_request(r) for r in fake.requests)


async def test_a_failing_summariser_leaves_a_plain_note_and_loses_nothing(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """When the model cannot summarise, a note stands in and the raw messages are archived."""
    from gsv_core.errors import ProviderFailed

    fake.enqueue("A" * 3000)
    await log.ended((await send(client, "first " + "x" * 3000))["runId"])
    await small_window(client)
    fake.by_system[SUMMARISER_SYSTEM] = [Fail(ProviderFailed("summariser down"))]
    fake.enqueue("still answering")
    assert (await log.ended((await send(client, "second"))["runId"]))["state"] == "final"
    stored = await gw.gateway.sessions.store.messages(KEY)
    assert stored[0]["role"] == "summary" and "no summary could be made" in stored[0]["content"]
    assert stored[0]["archivedTo"].startswith("agents/main/sessions/")


async def test_a_small_local_window_compacts_only_when_it_is_full(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """An 8,192-token window (a local model) with the default reserve and recent part
    (20,000 tokens each, more than the window): short turns are never compacted, since
    each takes at most a quarter of the window; once the talk fills the window it is
    compacted, and what is kept fits."""
    await client.call("config.set", {"path": "model.contextWindow", "value": 8192})
    for n in range(4):  # about 100 tokens a turn
        fake.enqueue(f"answer {n} " + "y" * 200)
        await log.ended((await send(client, f"question {n} " + "x" * 200))["runId"])
    assert not any(is_summary_request(r) for r in fake.requests)

    fake.by_system[SUMMARISER_SYSTEM] = ["<summary>Long talk.</summary>"]
    for n in range(3):  # about 2,400 tokens a turn: the window is full within three
        fake.enqueue("ok")
        await log.ended((await send(client, f"long {n} " + "z" * 8000))["runId"])
    compactions = [p for n, p in log.events if n == "session.notice" and p["kind"] == "compaction"]
    assert compactions
    # every request to the model fitted its window, the one after a compaction too
    for request in fake.requests:
        size = estimate_text(request.system) + sum(estimate_tokens(m) for m in request.messages)
        assert size <= 8192, size
