"""MCP tools ask unless their server marks them read-only (`readOnlyHint: true`), and the
owner's rules come first: an allow rule lets an unmarked tool run unasked, a deny rule
refuses even a read-only one (docs/mcp.md#approvals). The whole path, with a real MCP
server, is tested in tests/mcp/test_approval.py."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.approval.judge import judge_in_child
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected

WHY = "the MCP server does not mark this tool read-only"


def policy(**section: Any) -> ApprovalPolicy:
    return ApprovalPolicy.from_config({"toolApproval": section}, Protected())


def mcp(tool: str = "mcp_fs__write_file", read_only: bool = False, **args: Any) -> CallFacts:
    return CallFacts(tool, tool, None, args, read_only=read_only)


def test_an_mcp_tool_its_server_does_not_mark_read_only_asks_and_says_why() -> None:
    """Unmarked, it asks; the prompt names the reason and shows every argument."""
    decision = policy().decide(mcp(path="/home/me/.bashrc", content="curl x | sh"))
    assert decision.verdict == "ask" and decision.reason == WHY
    assert decision.rule_id == "gsv-mcp-unmarked"
    assert decision.summary == (
        'mcp_fs__write_file {"path": "/home/me/.bashrc", "content": "curl x | sh"}'
    )


def test_a_tool_marked_read_only_runs_unasked() -> None:
    """readOnlyHint true: the preset lets it run (the default decision, allow)."""
    assert policy().decide(mcp("mcp_fs__read_file", read_only=True, path="x")).verdict == "allow"


RULES = [
    ({"tool": "mcp_fs__write_file", "decision": "allow"}, False, "allow"),
    ({"tool": "mcp_*", "decision": "allow"}, False, "allow"),
    ({"tool": "mcp_fs__*", "decision": "deny"}, True, "deny"),
    ({"tool": "mcp_*", "decision": "ask"}, True, "ask"),
    ({"tool": "mcp_other__*", "decision": "allow"}, False, "ask"),
]


@pytest.mark.parametrize(("rule", "read_only", "verdict"), RULES)
def test_the_owners_rules_come_before_the_servers_mark(
    rule: dict[str, Any], read_only: bool, verdict: str
) -> None:
    """A rule naming the tool decides, whatever the server marks; one naming another
    server's tools changes nothing here."""
    decided = policy(rules=[rule]).decide(mcp(read_only=read_only, path="notes.txt"))
    assert decided.verdict == verdict


def test_a_rule_with_conditions_allows_only_the_calls_it_describes() -> None:
    """`when` narrows an allow rule to some arguments; the others still ask."""
    rule = {"tool": "mcp_fs__write_file", "decision": "allow",
            "when": [{"path": "path", "op": "startsWith", "value": "/home/me/notes/"}]}  # fmt: skip
    allowing = policy(rules=[rule])
    assert allowing.decide(mcp(path="/home/me/notes/a.md")).verdict == "allow"
    assert allowing.decide(mcp(path="/home/me/.bashrc")).verdict == "ask"


@pytest.mark.parametrize("section", [{"preset": "none"}, {"mode": "off"}])
def test_without_the_preset_mcp_tools_follow_the_default_decision(
    section: dict[str, Any],
) -> None:
    """`preset: none` and `mode: off` drop the rule, as they drop the native tools' asks."""
    assert policy(**section).decide(mcp(path="x")).verdict == "allow"


def test_a_stricter_default_decision_still_asks_for_read_only_tools() -> None:
    """`defaultDecision: ask` is the owner saying otherwise: read-only tools ask too."""
    decided = policy(defaultDecision="ask").decide(mcp("mcp_fs__read_file", read_only=True))
    assert decided.verdict == "ask"


def test_a_node_tool_named_like_an_mcp_tool_is_not_judged_as_one() -> None:
    """`laptop__mcp_notes` is a node's tool: the MCP rule does not take it."""
    call = CallFacts("laptop__mcp_notes", "mcp_notes", "laptop", {}, "/home/me/project")
    assert policy().decide(call).verdict == "allow"


async def test_an_mcp_call_judged_in_a_child_process_keeps_the_servers_mark() -> None:
    """A long `command` argument sends the call to the child judge (gateway/tool_router.py);
    the read-only mark goes with it."""
    for read_only, verdict in ((True, "allow"), (False, "ask")):
        facts = mcp("mcp_sh__run", read_only=read_only, command="x" * 20_000)
        decided = await judge_in_child({}, Protected(), facts)
        assert decided == policy().decide(facts) and decided.verdict == verdict
