"""A huge message costs its size once (issue 41 point 5): a message too big for the
model's context window is sent as a head-and-tail excerpt with a note, the user is told,
the history keeps it whole, and compaction never sends it (or a chunk that failed) twice.
The pure rules first, then a real gateway whose model is the official OpenAI SDK talking
HTTP to the fake LLM server, which records every request body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.agent.compaction import SUMMARISER_SYSTEM
from gsv_core.agent.compaction import SUMMARY_ROLE
from gsv_core.agent.compaction import as_model_message
from gsv_core.agent.compaction import summarise
from gsv_core.agent.model_view import ModelView
from gsv_core.agent.oversized import fit
from gsv_core.agent.oversized import message_limit
from gsv_core.client import GatewayClient
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.protocol.excerpt import cut_strings
from gsv_core.protocol.excerpt import excerpt
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import RecordedRequest
from tests.fakes.llm_server import Turn
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider

WINDOW = 32_000  # tokens: small, so a few KB of conversation fill it
WINDOW_BYTES = WINDOW * 4
HEAD, MIDDLE, TAIL = "HEAD-OF-THE-LOG", "MIDDLE-OF-THE-LOG", "TAIL-OF-THE-LOG"


def huge_log(size: int = 1_000_000) -> str:
    """A 1 MB pasted log with a marker at its start, its middle and its end."""
    half = "2026-11-28 worker ok\n" * (size // 42)
    return f"{HEAD}\n{half}{MIDDLE}\n{half}{TAIL}"


# --- the pure rules ------------------------------------------------------------------


def test_an_excerpt_keeps_head_and_tail_and_says_what_was_cut() -> None:
    text = "a" * 5_000 + "b" * 5_000
    short = excerpt(text, 1_000, "too long")
    assert short.startswith("a" * 600) and short.endswith("b" * 300)
    assert "[... 9,000 of 10,000 characters cut here: too long ...]" in short
    assert len(short) < 1_200
    assert excerpt("fits", 1_000) == "fits"


def test_cut_strings_leaves_short_strings_whole_and_shares_the_rest() -> None:
    """The JSON stays valid, the keys and the short values whole; the long ones share."""
    args = {"command": "x" * 100_000, "workdir": "/tmp/w", "env": {"A": "y" * 50_000}}
    cut_args, cut = cut_strings(args, 10_000, "too long")
    assert cut > 130_000
    assert cut_args["workdir"] == "/tmp/w" and set(cut_args) == set(args)
    assert len(cut_args["command"]) < 6_000 and len(cut_args["env"]["A"]) < 6_000
    assert json.loads(json.dumps(cut_args)) == cut_args
    same, none = cut_strings({"a": "short"}, 10_000)
    assert none == 0 and same == {"a": "short"}


def test_fit_cuts_text_and_tool_arguments_but_never_thinking() -> None:
    limit = message_limit(WINDOW, 4_000)
    user = {"role": "user", "content": huge_log(), "timestamp": 0}
    sent, cut = fit(user, limit, "too long for the window")
    assert cut > 900_000 and HEAD in sent["content"] and TAIL in sent["content"]
    assert MIDDLE not in sent["content"] and "too long for the window" in sent["content"]
    assert user["content"].count(MIDDLE) == 1  # the original is not changed
    thinking = {"type": "thinking", "thinking": "t" * 200_000, "signature": "s" * 500}
    call = {"type": "toolCall", "id": "c1", "name": "n__Bash",
            "arguments": {"command": huge_log()}}  # fmt: skip
    assistant = {"role": "assistant", "content": [thinking, call], "timestamp": 0}
    sent, cut = fit(assistant, limit, "too long")
    assert sent["content"][0] is thinking
    command = sent["content"][1]["arguments"]["command"]
    assert HEAD in command and TAIL in command and MIDDLE not in command
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "n__Read", "isError": False,
              "content": [{"type": "text", "text": huge_log()}], "timestamp": 0}  # fmt: skip
    sent, cut = fit(result, limit, "too long")
    shown = sent["content"][0]["text"]
    assert cut > 800_000 and HEAD in shown and TAIL in shown and MIDDLE not in shown
    assert sent["toolCallId"] == "c1" and sent["toolName"] == "n__Read"
    small = {"role": "user", "content": "hello", "timestamp": 0}
    assert fit(small, limit, "x") == (small, 0)
    near = {"role": "user", "content": "x" * int(limit * 3.2), "timestamp": 0}
    assert fit(near, limit, "x") == (near, 0)  # just under the limit: encoded, and fits


def test_a_history_is_fitted_once_and_an_excerpt_stays_one_object() -> None:
    """Every turn re-sends the history: ModelView answers each message it has seen with
    the same limit from what it kept (the same excerpt object, so its token estimate is
    kept too), works again when the limit changes, and forgets messages no longer passed."""
    small = {"role": "user", "content": "hello"}
    huge = {"role": "user", "content": "x" * 200_000}
    view = ModelView()

    def sent(history: list[dict[str, Any]], limit: int) -> list[tuple[dict[str, Any], int]]:
        return [(entry.message, entry.cut) for entry in view.sent(history, limit, "too long")]

    first = sent([small, huge], 2_000)
    assert first[0] == (small, 0) and first[0][0] is small
    excerpt_message, cut = first[1]
    assert cut > 0 and len(excerpt_message["content"]) < 20_000
    assert first[1] == fit(huge, 2_000, "too long")  # the same answer as fit's own
    again = sent([small, huge], 2_000)
    assert again[1][0] is excerpt_message  # kept, not made again
    tighter = sent([small, huge], 1_000)
    assert tighter[1][0] is not excerpt_message
    assert len(tighter[1][0]["content"]) < len(excerpt_message["content"])
    sent([small], 1_000)  # huge left the history (compacted)
    assert sent([huge], 1_000)[0][0] is not tighter[1][0]
    view.forget()
    assert sent([huge], 2_000)[0][0] is not excerpt_message


def test_the_model_is_sent_no_failed_reply_and_a_summary_in_its_model_form() -> None:
    """A failed reply stays in the history but is left out of what the model gets; a
    compaction summary reaches it as a user message, built once, not every turn."""
    summary = {"role": SUMMARY_ROLE, "content": "they talked about cats", "timestamp": 5}
    failed = {"role": "assistant", "content": [], "stopReason": "error", "timestamp": 6}
    question = {"role": "user", "content": "and dogs?", "timestamp": 7}
    view = ModelView()
    first = view.sent([summary, failed, question], 2_000, "too long")
    assert [entry.stored for entry in first] == [summary, question]
    assert first[0].message == as_model_message(summary)
    assert first[1].message is question and not first[1].cut and not first[1].media
    again = view.sent([summary, failed, question], 2_000, "too long")
    assert again[0].message is first[0].message


async def test_a_failed_chunk_is_not_sent_again_as_it_was() -> None:
    """Short messages have no shorter excerpt: their failed chunk is not tried again
    with the same text; a plain note stands in."""
    fake = FakeProvider()
    fake.by_system[SUMMARISER_SYSTEM] = [Fail(ProviderFailed("summariser down"))]
    messages = [{"role": "user", "content": f"short {i}", "timestamp": 0} for i in range(5)]
    summary = await summarise(fake, "m", messages, window=WINDOW)
    assert len(fake.requests) == 1
    assert summary.tier == "plaintext" and "5 earlier messages" in summary.text


# --- a real gateway, the OpenAI SDK, the fake LLM server --------------------------------


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    """Providers resolved from the config, as in production (no scripted provider)."""
    async with serve(ServerConfig(database=tmp_path / "data" / "gsv.db"), port=0) as running:
        yield running


async def fake_model(client: GatewayClient, llm: FakeLLMServer) -> None:
    provider = {"api": "openai", "baseUrl": llm.openai_base_url}
    await client.call("config.set", {"path": "providers.fake", "value": provider})
    model = {"provider": "fake", "id": "fake-model"}  # 128,000 tokens: the default window
    await client.call("config.set", {"path": "model", "value": model})


async def small_window(client: GatewayClient) -> None:
    """A 32,000-token window from now on: what the earlier turns hold now needs compacting."""
    values = {"model.contextWindow": WINDOW, "compaction.reserveTokens": 4_000,
              "compaction.keepRecentTokens": 1_000}  # fmt: skip
    for path, value in values.items():
        await client.call("config.set", {"path": path, "value": value})


def summaries_or(refuse_summary_of: str | None = None) -> Any:
    """The fake model: a summary for the summariser (refusing, once, a chunk holding
    `refuse_summary_of`), a short answer otherwise; a request bigger than the window is
    refused as a real model would."""
    refused: list[RecordedRequest] = []

    def choose(request: RecordedRequest) -> Turn:
        if request.size > WINDOW_BYTES:
            return ErrorReply(400, "maximum context length exceeded",
                              code="context_length_exceeded")  # fmt: skip
        messages = request.body["messages"]
        if str(messages[0]["content"]) != SUMMARISER_SYSTEM:
            return reply("Noted.")
        if refuse_summary_of and refuse_summary_of in str(messages) and not refused:
            refused.append(request)
            return ErrorReply(400, "this chunk cannot be summarised")
        return reply("<summary>They talked.</summary><memories></memories>")

    return choose


async def earlier_turns(
    client: GatewayClient, log: EventLog, count: int, prefix: str = "turn"
) -> None:
    for turn in range(count):
        text = f"{prefix} {turn}: " + "what the log said today. " * 24
        run = (await send(client, text))["runId"]
        assert (await log.ended(run))["state"] == "final"


def summariser_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if str(r.body["messages"][0]["content"]) == SUMMARISER_SYSTEM]


async def test_a_huge_message_after_100_turns_is_sent_once_as_an_excerpt(
    gw: RunningGateway, client: GatewayClient, llm: FakeLLMServer, log: EventLog
) -> None:
    """100 earlier turns and a 1 MB message: the run compacts and answers; the bytes sent
    to the model over the whole turn stay under twice the window; only the excerpt of
    the message is sent, once; the user is told; the history keeps all of it."""
    await fake_model(client, llm)
    llm.choose = summaries_or()
    await earlier_turns(client, log, 100)
    assert not summariser_requests(llm.requests)
    await small_window(client)
    first = len(llm.requests)
    message = huge_log()
    run = (await send(client, message))["runId"]
    ended = await log.ended(run)
    assert ended["state"] == "final", ended
    sent = llm.requests[first:]
    assert summariser_requests(sent)  # the turn compacted the 100 earlier ones first
    assert sum(r.size for r in sent) < 2 * WINDOW_BYTES
    bodies = [json.dumps(r.body) for r in sent]
    assert sum(HEAD in body for body in bodies) == 1  # the excerpt, sent once
    assert not any(MIDDLE in body for body in bodies)  # the whole message, never
    notices = [p for n, p in log.events if n == "session.notice" and p["kind"] == "cut"]
    assert len(notices) == 1 and notices[0]["runId"] == run
    assert notices[0]["details"]["chars"] == len(message)
    assert notices[0]["details"]["cutChars"] > 900_000 and "cut" in notices[0]["text"]
    stored = await gw.gateway.sessions.store.messages(KEY)
    assert any(m["role"] == "user" and m["content"] == message for m in stored)


async def test_a_failed_summary_does_not_send_the_same_content_again(
    gw: RunningGateway, client: GatewayClient, llm: FakeLLMServer, log: EventLog
) -> None:
    """A huge message deep in the history is summarised as an excerpt; the model refuses
    that chunk once; the retry sends short excerpts only, and the chunks summarised
    before it are not sent again."""
    await fake_model(client, llm)
    await small_window(client)
    llm.choose = summaries_or(refuse_summary_of=HEAD)
    await earlier_turns(client, log, 3)
    run = (await send(client, huge_log()))["runId"]
    assert (await log.ended(run))["state"] == "final"
    first = len(llm.requests)
    await earlier_turns(client, log, 60, "later")  # enough to push the huge message out
    summarised = summariser_requests(llm.requests[first:])
    holding = [json.dumps(r.body) for r in summarised if HEAD in json.dumps(r.body)]
    assert len(holding) == 2  # refused once, retried once
    assert not any(MIDDLE in body for body in holding)
    refused, retried = holding
    assert len(retried) < len(refused) and len(retried) < 12_000
    for turn in range(3):  # the earlier turns' chunk went out once
        marker = f"turn {turn}: "
        assert sum(marker in json.dumps(r.body) for r in summarised) == 1
    stored = await gw.gateway.sessions.store.messages(KEY)
    assert stored[0]["role"] == "summary" and stored[0]["content"] == "They talked."


async def test_an_overflow_all_the_same_cuts_tighter_and_retries_once(
    gw: RunningGateway, client: GatewayClient, llm: FakeLLMServer, log: EventLog
) -> None:
    """A model whose tokenizer counts more than our estimate (a dense text) refuses the
    excerpt: the run cuts the message to a quarter of its share and tries once more,
    in a fresh session where there is nothing to compact."""
    await fake_model(client, llm)
    await small_window(client)
    dense_limit = 30_000  # bytes this model takes: less than the excerpt we send

    def choose(request: RecordedRequest) -> Turn:
        if request.size > dense_limit:
            return ErrorReply(400, "prompt is too long", code="context_length_exceeded")
        return reply("Read it.")

    llm.choose = choose
    run = (await send(client, huge_log()))["runId"]
    ended = await log.ended(run)
    assert ended["state"] == "final", ended
    refused, answered = llm.requests
    assert refused.size > dense_limit >= answered.size
    for request in (refused, answered):
        body = json.dumps(request.body)
        assert HEAD in body and TAIL in body and MIDDLE not in body
