"""Review of the approval gate, "always allow" (B): a rule offered from the prompt, or
set by hand, must not let in the forms of its program that run other programs
(`find . -exec`, `tar --checkpoint-action=exec=`, `sed -e '1e ...'`, `make -f`,
`git diff --ext-diff`, `git clone --config`), and no rule is offered for programs whose
danger lies in their options or in a script given as a word."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.approval.always import covers
from gsv_core.approval.always import rule_for
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected

WORKSPACE = "/work/space"


def decide(command: str, allow: list[str] | None = None, rules: Any = None) -> Any:
    section = {"allow": allow or [], "rules": rules or []}
    policy = ApprovalPolicy.from_config({"toolApproval": section}, Protected())
    return policy.decide(CallFacts("n__Bash", "Bash", "n", {"command": command}, WORKSPACE))


@pytest.mark.parametrize(
    ("asked", "later"),
    [
        ("find . -name '*.pyc' -delete", "find . -exec sh -c 'touch x' ;"),
        ("tar czf backup.tgz src",
         "tar czf /dev/null src --checkpoint=1 '--checkpoint-action=exec=touch x'"),
        ("sed s/foo/bar/ notes.txt", "sed s/foo/bar/ -e '1e touch x' notes.txt"),
        ("make test", "make test -f /dev/stdin"),
        ("make test", "make test SHELL=/tmp/evil"),
        ("git diff --ext-diff", "git diff --ext-diff HEAD"),
        ("git clone https://example.org/r.git", "git clone --config core.fsmonitor=x u"),
        ("git config user.name me", "git config core.fsmonitor 'touch x'"),
    ],
)  # fmt: skip
def test_the_rule_offered_does_not_allow_the_dangerous_form(asked: str, later: str) -> None:
    """Whatever "always" offers for the first line, the second still asks with it."""
    offered = decide(asked)
    assert offered.verdict == "ask"
    assert decide(later, allow=list(offered.always)).verdict == "ask"


@pytest.mark.parametrize(
    "argv",
    [
        ("find", ".", "-name", "*.pyc", "-delete"),
        ("tar", "czf", "b.tgz", "src"),
        ("sed", "s/foo/bar/", "notes.txt"),
        ("awk", "{print $1}", "f"),
        ("xargs", "rm"),
        ("env", "FOO=1", "make"),
        ("git", "config", "user.name", "me"),
        ("git", "submodule", "foreach", "x"),
    ],
)
def test_no_rule_is_offered_for_programs_driven_by_options_or_scripts(
    argv: tuple[str, ...],
) -> None:
    """find, tar, sed, awk, xargs, env and git's config and command runners: allow once."""
    assert rule_for(argv) is None


@pytest.mark.parametrize(
    ("rule", "line"),
    [
        ("find .", "find . -exec sh -c 'touch x' ;"),
        ("tar czf", "tar czf b.tgz src '--to-command=sh -c x'"),
        ("sed s/foo/bar/", "sed s/foo/bar/ -e '1e touch x' f"),
        ("sed", "sed '1e touch x' f"),
        ("awk", "awk 'BEGIN{system(\"x\")}'"),
        ("make test", "make test --eval=x"),
        ("make", "make -C /tmp/evil"),
        ("env", "env sh -c x"),
        ("xargs", "xargs sh"),
        ("sort", "sort -o /etc/motd f"),
        ("git diff", "git diff --ext-diff"),
        ("git log", "git log --output=/etc/motd"),
        ("git clone", "git clone -u 'sh -c x' repo"),
        ("git clone", "git clone --template=evil repo"),
        ("git fetch", "git fetch --upload-pack='sh -c x' origin"),
        ("git rebase", "git rebase -x 'sh -c x' main"),
        ("git grep", "git grep -Osh x"),
        ("make test", "make test {-f,/dev/stdin}"),  # brace expansion makes an option
        ("sort", "sort {-o,x} y"),
        ("git", "git -c core.pager='sh -c id' log"),  # git's own options first
        ("git", "git --no-pager log --output=/tmp/x"),
    ],
)
def test_a_rule_set_by_hand_does_not_cover_options_that_run_programs(rule: str, line: str) -> None:
    """Rules already in `toolApproval.allow` (set by hand or offered before) still ask
    for the options and scripts that run other programs."""
    assert decide(line, allow=[rule]).verdict == "ask"


@pytest.mark.parametrize(
    ("rule", "line"),
    [
        ("make test", "make test"),
        ("make", "make build lint"),
        ("tar czf", "tar czf b.tgz src"),
        ("sed s/foo/bar/", "sed s/foo/bar/ notes.txt"),
        ("git commit", "git commit -m 'fix -x in --exec'"),
        ("git clone", "git clone https://example.org/r.git"),
        ("python3 job.py", "python3 job.py --fast -c x"),
        ("npm test", "npm test -- --watch"),
    ],
)
def test_rules_still_allow_what_they_name(rule: str, line: str) -> None:
    """The everyday uses of a rule run unasked."""
    assert decide(line, allow=[rule]).verdict == "allow"


def test_a_configured_allow_rule_for_a_wrapper_covers_only_itself() -> None:
    """`programs: [env]` does not allow what env would run."""
    rules = [{"id": "env", "tool": "*__Bash", "programs": ["env"], "decision": "allow"}]
    assert decide("env sh -c 'touch x'", rules=rules).verdict == "ask"
    assert covers(("make",), ("make", "test"))
