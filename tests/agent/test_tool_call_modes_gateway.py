"""`providers.<name>.toolCalls` and Ollama's reported window through a real gateway whose
provider is an official SDK talking HTTP to the fake LLM server: a model that writes its
tool calls as JSON text gets its tools run and its answer delivered, the JSON never
staying on screen; `off` sends no tools; the window Ollama reports sets when compaction
runs."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.client import GatewayClient
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.failover.conftest import configure
from tests.failover.conftest import fake_provider
from tests.failover.conftest import gw
from tests.failover.conftest import llm
from tests.failover.conftest import waits
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply

# the gateway of tests/failover: providers resolved from the config, SDKs over HTTP
__all__ = ["gw", "llm", "waits"]

WRITE = '{"name": "gsv__WriteFile", "arguments": {"path": "note.txt", "content": "hello"}}'
READ = '```json\n{"name": "gsv__ReadFile", "arguments": {"path": "note.txt"}}\n```'


async def use(client: GatewayClient, llm: FakeLLMServer, api: str, mode: str) -> None:
    await configure(client, {
        "providers.local": {**fake_provider(llm, api), "toolCalls": mode},
        "model": {"provider": "local", "id": "tiny-0.5b"},
    })  # fmt: skip


def shown(log: EventLog, run: str) -> str:
    """The answer as a chat shows it: deltas appended, a `replace` delta in place."""
    text = ""
    for payload in log.of_run(run):
        if payload["state"] == "delta":
            text = payload["text"] if payload.get("replace") else text + payload["text"]
    return text


def tools_of(log: EventLog, run: str) -> list[tuple[str, str, Any]]:
    return [(t["name"], t["phase"], t.get("isError"))
            for t in (p["tool"] for p in log.of_run(run, "chat.tool"))]  # fmt: skip


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_tool_calls_written_as_text_run_and_the_answer_arrives(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer, api: str
) -> None:
    """The model writes a call as JSON (then one in a fence): each runs through the normal
    tool path, its result goes back as text, the final answer arrives, and the chat ends
    showing the answer alone."""
    await use(client, llm, api, "text")
    llm.enqueue(reply(WRITE[:30], WRITE[30:]), reply(READ), reply("The note says ", "hello."))
    run = str((await send(client, "write hello to a note, then read it back"))["runId"])
    ended = await log.ended(run)
    assert ended["state"] == "final", ended
    assert tools_of(log, run) == [
        ("gsv__WriteFile", "start", None), ("gsv__WriteFile", "end", False),
        ("gsv__ReadFile", "start", None), ("gsv__ReadFile", "end", False),
    ]  # fmt: skip
    deltas = [p for p in log.of_run(run) if p["state"] == "delta"]
    assert any('"gsv__WriteFile"' in p["text"] for p in deltas)  # streamed as it came ...
    assert sum(1 for p in deltas if p.get("replace") and p["text"] == "") == 2  # ... retracted
    assert shown(log, run) == "The note says hello."
    assert all("tools" not in r.body for r in llm.requests)
    assert "- gsv__WriteFile: " in str(llm.requests[0].body)
    last = str(llm.requests[2].body["messages"])
    assert "[tool result] gsv__ReadFile returned:" in last and "hello" in last
    preview = await client.call("session.preview", {"sessionKey": "agent:main:main"})
    calls = [b["name"] for m in preview["messages"] if m["role"] == "assistant"
             for b in m["content"] if b["type"] == "toolCall"]  # fmt: skip
    assert calls == ["gsv__WriteFile", "gsv__ReadFile"]


async def test_a_quoted_call_is_an_answer_not_a_call(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """A reply that only mentions a call in prose runs nothing and is the answer."""
    await use(client, llm, "openai", "text")
    said = f"I could answer {WRITE} but I will not."
    llm.enqueue(reply(said))
    run = str((await send(client, "how would you write a note?"))["runId"])
    assert (await log.ended(run))["state"] == "final"
    assert tools_of(log, run) == [] and shown(log, run) == said
    assert len(llm.requests) == 1


async def test_off_sends_no_tools_and_answers_in_words(
    client: GatewayClient, log: EventLog, llm: FakeLLMServer
) -> None:
    """toolCalls off: the request carries no tools at all and its prompt lists none; the
    run ends with the text."""
    await use(client, llm, "openai", "off")
    llm.enqueue(reply("No tools here, ", "just words."))
    run = str((await send(client, "hello"))["runId"])
    ended = await log.ended(run)
    assert ended["state"] == "final"
    body = llm.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    system = body["messages"][0]["content"]
    assert "No tools are attached to this run." in system and "Gateway tools" not in system
    assert shown(log, run) == "No tools here, just words."


@pytest.mark.parametrize(("reported", "compacted"), [(1024, True), (131072, False), (None, False)])
async def test_the_window_ollama_reports_decides_when_compaction_runs(
    client: GatewayClient,
    log: EventLog,
    llm: FakeLLMServer,
    reported: int | None,
    compacted: bool,
) -> None:
    """With Ollama reporting a small window, a history that does not fit it is compacted;
    a large window, or none reported (the default), leaves it. Ollama is asked once."""
    if reported is not None:
        llm.show["tiny"] = {"model_info": {"qwen2.context_length": reported}}
    await configure(client, {"providers.ollama": fake_provider(llm, "openai"),
                             "model": {"provider": "ollama", "id": "tiny"},
                             "compaction.reserveTokens": 0})  # fmt: skip
    words = "lorem ipsum " * 300  # about 1000 tokens a message, as compaction counts
    for _ in range(2):
        run = str((await send(client, words))["runId"])
        assert (await log.ended(run))["state"] == "final"
    notices = [p for name, p in log.events if name == "session.notice"
               and p.get("kind") == "compaction"]  # fmt: skip
    assert bool(notices) is compacted
    assert llm.show_requests == [{"model": "tiny"}]
