"""Long lines are judged in a child process (the gateway keeps serving meanwhile): the
child decides exactly as the policy does in process."""

from __future__ import annotations

import asyncio
import signal

import pytest

from gsv_core.approval.judge import answer_of
from gsv_core.approval.judge import judge_in_child
from gsv_core.approval.judge import start_child
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected

PROTECTED = Protected(frozenset({4242}), frozenset({"/home/me/.config/gsv/secrets.toml"}))


async def test_the_child_decides_like_the_policy() -> None:
    """Same verdict, reason and offered rules for long lines of every kind."""
    config = {"toolApproval": {"allow": ["npm test"], "maxCommandBytes": 1 << 20}}
    policy = ApprovalPolicy.from_config(config, PROTECTED)
    words = "a.txt " * 4000
    for line in [f"ls {words}", f"ls {words} && make build", f"cat {words} /home/me/.config/gsv/secrets.toml",
                 f"npm test {words}", f"echo $(rm x) {words}"]:  # fmt: skip
        facts = CallFacts("n1__Bash", "Bash", "n1", {"command": line}, "/w")
        assert await judge_in_child(config, PROTECTED, facts) == policy.decide(facts), line[:40]


async def test_a_child_that_cannot_judge_makes_the_call_ask() -> None:
    """An unreadable request (a call the child cannot rebuild) asks, never allows."""
    facts = CallFacts("n1__Bash", "Bash", "n1", {"command": "ls"}, "/w")
    bad = Protected(frozenset({4242}), frozenset({"/x"}))
    decided = await judge_in_child({"toolApproval": {"rules": [{"decision": "maybe"}]}}, bad, facts)
    assert decided.verdict == "ask" and "could not judge" in decided.reason
    assert decided.summary == "ls"  # the prompt still shows what would run


async def test_a_child_that_cannot_judge_shows_direction_controls_as_escapes() -> None:
    facts = CallFacts("n1__Bash", "Bash", "n1", {"command": "echo \u202eok"}, "/w")
    broken = {"toolApproval": {"rules": [{"decision": "maybe"}]}}
    decided = await judge_in_child(broken, PROTECTED, facts)
    assert decided.summary == "echo \\u202eok"


async def test_a_stopped_run_kills_and_reaps_its_judge_child() -> None:
    """The run stops while the child is still starting: the child is killed and reaped
    before the cancel goes on (left unreaped, its transport outlived the test's loop and
    a later test saw the ResourceWarning)."""
    child = await start_child()
    asking = asyncio.create_task(answer_of(child, b"{}"))
    await asyncio.sleep(0)  # the request is written; Python in the child is still starting
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert child.returncode == -signal.SIGKILL
