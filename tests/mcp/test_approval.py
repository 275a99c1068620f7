"""MCP tools under the approval policy, on a real gateway with the toy MCP server over
stdio: a tool its server does not mark read-only asks first (refused, it never runs), a
read-only one runs unasked, the owner's rules come first, and a server restarted with
other annotations is judged by the new ones (docs/mcp.md#approvals)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from tests.agent.conftest import EventLog
from tests.approval.test_native_asks import one_call
from tests.fakes.provider import FakeProvider
from tests.mcp.conftest import eventually
from tests.mcp.conftest import set_rules
from tests.mcp.conftest import stdio

WHY = "the MCP server does not mark this tool read-only"


async def approvals(client: GatewayClient) -> dict[str, tuple[bool, str]]:
    """{offered name: (read-only, approval)} of the toy server, as mcp.list gives them."""
    server = (await client.call("mcp.list"))["servers"][0]
    return {t["name"]: (t["readOnly"], t["approval"]) for t in server["tools"]}


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_an_unmarked_tool_asks_first_and_refused_never_runs(
    client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path, answer: str
) -> None:
    """write_note is annotated, but not read-only: the call waits for the owner, and the
    prompt says why and shows every argument; denied, the file is never written."""
    await client.call("mcp.add", {"name": "toy", **stdio()})
    note = tmp_path / "note.txt"
    args = {"path": str(note), "text": "hello"}

    def not_yet_written() -> None:
        assert not note.exists()

    request, result = await one_call(client, fake, log, "mcp_toy__write_note", args,
                                     answer=answer, before=not_yet_written)  # fmt: skip
    assert request is not None and request["reason"] == WHY
    assert request["ruleId"] == "gsv-mcp-unmarked" and request["args"] == args
    assert request["summary"] == f'mcp_toy__write_note {{"path": "{note}", "text": "hello"}}'
    paused = next(p for n, p in log.events if n == "chat" and p.get("state") == "paused")
    assert f"Why: {WHY}" in paused["message"]["content"][0]["text"]
    if answer == "allow":
        assert result["isError"] is False and note.read_text() == "hello"
    else:
        assert result["isError"] is True and "denied by user" in result["content"][0]["text"]
        assert not note.exists()


async def test_a_tool_without_annotations_asks_too(
    client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """echo has no annotations at all: it asks like any unmarked tool."""
    await client.call("mcp.add", {"name": "toy", **stdio()})
    request, result = await one_call(client, fake, log, "mcp_toy__echo", {"text": "hi"},
                                     answer="allow")  # fmt: skip
    assert request is not None and request["reason"] == WHY
    assert result["content"] == [{"type": "text", "text": "echo: hi"}]


async def test_a_read_only_tool_runs_unasked(
    client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """read_note is marked readOnlyHint: no prompt, and the model reads the file."""
    await client.call("mcp.add", {"name": "toy", **stdio()})
    (tmp_path / "note.txt").write_text("kept")
    _, result = await one_call(client, fake, log, "mcp_toy__read_note",
                               {"path": str(tmp_path / "note.txt")})  # fmt: skip
    assert result["isError"] is False and result["content"] == [{"type": "text", "text": "kept"}]


@pytest.mark.parametrize("pattern", ["mcp_toy__write_note", "mcp_*"])
async def test_an_owner_allow_rule_lets_an_unmarked_tool_run_unasked(
    client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path, pattern: str
) -> None:
    """The owner's rule comes before the server's mark: no prompt, the file is written."""
    await client.call("mcp.add", {"name": "toy", **stdio()})
    await set_rules(client, {"tool": pattern, "decision": "allow"})
    note = tmp_path / "note.txt"
    _, result = await one_call(client, fake, log, "mcp_toy__write_note",
                               {"path": str(note), "text": "ok"})  # fmt: skip
    assert result["isError"] is False and note.read_text() == "ok"
    assert (await approvals(client))["mcp_toy__write_note"] == (False, "allow")


async def test_a_deny_rule_refuses_even_a_read_only_tool(
    client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """The server's mark does not overrule the owner: a deny rule refuses read_note."""
    await client.call("mcp.add", {"name": "toy", **stdio()})
    await set_rules(client, {"tool": "mcp_toy__read_*", "decision": "deny", "reason": "no reading"})
    (tmp_path / "note.txt").write_text("kept")
    _, result = await one_call(client, fake, log, "mcp_toy__read_note",
                               {"path": str(tmp_path / "note.txt")})  # fmt: skip
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Error: Tool execution denied by policy: no reading"
    assert (await approvals(client))["mcp_toy__read_note"] == (True, "deny")


async def test_a_server_restarted_with_other_annotations_is_judged_by_the_new_ones(
    client: GatewayClient, fake: FakeProvider, log: EventLog, tmp_path: Path
) -> None:
    """write_note starts marked read-only and runs unasked; the server drops the mark and
    is restarted (it crashed): the same call now asks, and refused, it does not run."""
    marks = tmp_path / "marks"
    marks.write_text("write_note")
    await client.call("mcp.add", {"name": "toy", **stdio(env={"TOY_MARKS_FILE": str(marks)})})
    assert (await approvals(client))["mcp_toy__write_note"] == (True, "allow")
    first = tmp_path / "first.txt"
    await one_call(client, fake, log, "mcp_toy__write_note", {"path": str(first), "text": "1"})
    assert first.read_text() == "1"

    marks.write_text("")
    with pytest.raises(GsvError, match="closed the connection"):
        await client.call("tool.invoke", {"tool": "mcp_toy__crash", "args": {}})

    async def restarted_unmarked() -> bool:
        return (await approvals(client)).get("mcp_toy__write_note") == (False, "ask")

    await eventually(restarted_unmarked, "the restarted server's new annotations")
    log.events.clear()
    second = tmp_path / "second.txt"
    request, _ = await one_call(client, fake, log, "mcp_toy__write_note",
                                {"path": str(second), "text": "2"}, answer="deny")  # fmt: skip
    assert request is not None and request["reason"] == WHY and not second.exists()
