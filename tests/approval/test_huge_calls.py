"""A tool call with a huge argument (a generated 1 MB text or command) reaches its
approval prompt with a bounded preview, says that the preview is cut, and is sent back
to the model as an excerpt; the history keeps the call whole (issue 41 point 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsv_core.approval.decision import Decision
from gsv_core.approval.policy import ASK
from gsv_core.approval.service import PREVIEW_CHARS
from gsv_core.approval.service import ApprovalService
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.agent.test_oversized import HEAD
from tests.agent.test_oversized import MIDDLE
from tests.agent.test_oversized import TAIL
from tests.agent.test_oversized import huge_log
from tests.approval.test_flow import approval_event
from tests.approval.test_flow import node
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


async def test_a_huge_command_line_is_shown_as_an_excerpt() -> None:
    """A generated 1 MB Bash line: the prompt's summary and arguments are excerpts, and
    say so; the approval itself holds the whole call (it is what runs)."""
    line = f"cat > report.txt <<'EOF'\n{huge_log()}\nEOF"
    approvals = ApprovalService(lambda: 0)
    decision = Decision(ASK, "a heredoc is not read with confidence", None, line)
    approval = approvals.open(KEY, "r1", "c1", "n1__Bash", {"command": line}, decision, 60)
    wire = approval.to_wire()
    assert wire["previewCut"] is True and len(json.dumps(wire)) < 3 * PREVIEW_CHARS
    for shown in (wire["summary"], wire["args"]["command"]):
        assert shown.startswith("cat > report.txt") and shown.endswith("EOF")
        assert "characters cut here" in shown and MIDDLE not in shown
    assert approval.args["command"] == line
    small = approvals.open(KEY, "r1", "c2", "n1__Bash", {"command": "rm x"},
                           Decision(ASK, "rm", None, "rm x"), 60)  # fmt: skip
    assert "previewCut" not in small.to_wire() and small.to_wire()["summary"] == "rm x"


async def test_a_huge_call_asks_with_a_bounded_preview(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A 1 MB rewrite of AGENTS.md asks; the prompt, the paused message and the tool's
    start event carry previews; the model reads its call back as an excerpt; the
    history keeps the whole call."""
    text = huge_log()
    fake.enqueue(call("gsv__WriteFile", {"path": "AGENTS.md", "content": text}))
    fake.enqueue("Not written.")
    run = (await send(client, "write the rules"))["runId"]
    await log.wait(lambda: any(n == "tool.approval" for n, _ in log.events), "the prompt")
    asked = next(p for n, p in log.events if n == "tool.approval")
    assert asked["previewCut"] is True
    assert len(json.dumps(asked)) < 3 * PREVIEW_CHARS
    shown = asked["args"]["content"]
    assert HEAD in shown and TAIL in shown and MIDDLE not in shown
    assert "characters cut here" in shown
    assert asked["args"]["path"] == "AGENTS.md"  # the short arguments whole
    paused = next(p for p in log.of_run(run) if p["state"] == "paused")
    assert len(json.dumps(paused)) < 2_000
    started = next(p["tool"] for n, p in log.events if n == "chat.tool" and p.get("runId") == run)
    assert len(started["args"]["content"]) < 20_000 and MIDDLE not in started["args"]["content"]
    await client.call("tool.approve", {"approvalId": asked["approvalId"], "decision": "deny"})
    assert (await log.ended(run))["state"] == "final"
    # the model reads its own call back as an excerpt; the history holds it whole
    sent = next(m for m in fake.requests[-1].messages if m["role"] == "assistant")
    sent_text = sent["content"][0]["arguments"]["content"]
    assert HEAD in sent_text and TAIL in sent_text and MIDDLE not in sent_text
    stored = await gw.gateway.sessions.store.messages(KEY)
    calls = [b for m in stored if m["role"] == "assistant" for b in m["content"]
             if b.get("type") == "toolCall"]  # fmt: skip
    assert calls[0]["arguments"]["content"] == text


@pytest.mark.parametrize("words", [60, 5_000], ids=["long", "too-long-to-read"])
async def test_a_long_line_shows_its_end_and_says_it_was_cut(
    gw: RunningGateway,
    client: GatewayClient,
    fake: FakeProvider,
    log: EventLog,
    tmp_path: Path,
    words: int,
) -> None:
    """A line padded past what a prompt shows must not hide what it ends with: the
    prompt's summary and the paused message (all a channel's owner sees above the Allow
    button) show its end too and say how much of the middle they leave out, for a line
    the gate reads and for one over toolApproval.maxCommandBytes alike."""
    (tmp_path / "build").mkdir()
    line = f"echo '{'harmless words ' * words}' ; rm -rf build"
    fake.enqueue(call("n1__Bash", {"command": line}))
    fake.enqueue("Not removed.")
    async with node(gw.url, tmp_path):
        run = (await send(client, "tidy up"))["runId"]
        asked = await approval_event(log)
        paused = next(p for p in log.of_run(run) if p["state"] == "paused")
        text = paused["message"]["content"][0]["text"]
        assert "rm -rf build" in text and "characters cut here" in text
        assert len(text) < len(line)
        summary = asked["summary"]  # what the TUI, the web chat and `gsv approvals` show
        assert summary.endswith("rm -rf build")
        assert summary == line or "characters cut here" in summary
        # a line too long to read was not judged: no prompt may say its hidden part was
        assert "judged" not in text + summary
        await client.call("tool.approve", {"approvalId": asked["approvalId"], "decision": "deny"})
        assert (await log.ended(run))["state"] == "final"
    assert (tmp_path / "build").exists()
