"""The sandbox's latitude (`toolApproval.sandboxed`, docs/sandbox.md): on a sandboxed node a
line that would ask only because it writes in the workspace or runs a local program runs
unasked (confined); what the sandbox does not contain still asks; the owner's own rules,
a deny default, `unsandboxed` and `sandboxed: ask` all keep their say."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected
from tests.approval.everyday_work import EVERYDAY_WORK

WORKSPACE = "/home/me/project"


def policy(**section: Any) -> ApprovalPolicy:
    return ApprovalPolicy.from_config({"toolApproval": section}, Protected())


def bash(command: str, sandboxed: bool = True, **args: Any) -> CallFacts:
    return CallFacts("laptop__Bash", "Bash", "laptop", {"command": command, **args}, WORKSPACE,
                     sandboxed=sandboxed)  # fmt: skip


@pytest.mark.parametrize(
    ("line", "still_asks"), EVERYDAY_WORK, ids=[line for line, _ in EVERYDAY_WORK]
)
def test_everyday_work_asks_without_a_sandbox_and_only_what_it_cannot_contain_with_one(
    line: str, still_asks: bool
) -> None:
    judge = policy()
    assert judge.decide(bash(line, sandboxed=False)).verdict == "ask"
    inside = judge.decide(bash(line))
    assert inside.verdict == ("ask" if still_asks else "allow"), inside.reason
    if not still_asks:
        assert inside.reason == "runs inside the node's sandbox" and not inside.granted


def test_the_count_of_questions_falls() -> None:
    """Of the everyday lines, every one asks without a sandbox; with one, only those whose
    harm the sandbox does not contain (the figure bench/sandbox.py prints)."""
    judge = policy()
    without = sum(
        judge.decide(bash(line, sandboxed=False)).verdict == "ask" for line, _ in EVERYDAY_WORK
    )
    within = sum(judge.decide(bash(line)).verdict == "ask" for line, _ in EVERYDAY_WORK)
    assert without == len(EVERYDAY_WORK) and within == sum(s for _, s in EVERYDAY_WORK)
    assert within < without / 2


def test_sandboxed_ask_keeps_every_question() -> None:
    judge = policy(sandboxed="ask")
    assert all(judge.decide(bash(line)).verdict == "ask" for line, _ in EVERYDAY_WORK)


def test_an_owner_rule_that_asks_and_a_deny_default_still_decide() -> None:
    ask_make = policy(rules=[{"tool": "*__Bash", "programs": ["make"], "decision": "ask"}])
    assert ask_make.decide(bash("make test")).verdict == "ask"
    assert policy(defaultDecision="deny").decide(bash("make test")).verdict == "deny"


def test_unsandboxed_and_process_writes_get_no_latitude() -> None:
    """`unsandboxed: true` wants out of the sandbox; a Process write feeds a command that
    may run outside it: both are judged as on a node without a sandbox."""
    judge = policy()
    assert judge.decide(bash("make", unsandboxed=True)).verdict == "ask"
    write = CallFacts("laptop__Process", "Process", "laptop",
                      {"action": "submit", "sessionId": "s", "data": "make"}, WORKSPACE,
                      sandboxed=True)  # fmt: skip
    assert judge.decide(write).verdict == "ask"


def test_protections_still_refuse_inside_the_sandbox() -> None:
    judge = ApprovalPolicy.from_config(
        {}, Protected(secret_paths=frozenset({"/home/me/.config/gsv/secrets.toml"}))
    )
    decided = judge.decide(bash("python3 job.py < /home/me/.config/gsv/secrets.toml"))
    assert decided.verdict == "deny"


def test_an_allowlisted_line_is_not_granted_full_access() -> None:
    """Running unasked (the table, the latitude) is not the owner's grant: confined."""
    judge = policy(allow=["make test"])
    assert judge.decide(bash("make test")).granted is True
    assert judge.decide(bash("make test && ls")).granted is False
    assert judge.decide(bash("ls")).granted is False
