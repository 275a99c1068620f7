"""The three verdicts and a decision about one call (what was judged, why, by which rule)."""

from __future__ import annotations

from dataclasses import dataclass

ALLOW, ASK, DENY = "allow", "ask", "deny"
SEVERITY = {ALLOW: 0, ASK: 1, DENY: 2}


@dataclass(frozen=True)
class Decision:
    verdict: str
    reason: str = ""
    rule_id: str | None = None
    summary: str = ""  # what was judged (the command line, the path)
    # rules (`git commit`, `python3 job.py`) that, once added, let this line run unasked
    always: tuple[str, ...] = ()
    # allowed by the owner's own rules (every command of a line), not merely by the
    # read-only table or the mode: such a call runs with full access, outside the node's
    # sandbox, as an approved one does (docs/sandbox.md)
    granted: bool = False
    # asks about a command a sandboxed node would run: approved, it runs outside the
    # sandbox (the prompt says so)
    leaves_sandbox: bool = False

    @property
    def needs_human(self) -> bool:
        return self.verdict == ASK


def most_cautious(first: Decision, second: Decision) -> Decision:
    return second if SEVERITY[second.verdict] > SEVERITY[first.verdict] else first


def combined(first: Decision | None, second: Decision) -> Decision:
    """The decision on a line so far (`first`, None before its first command) and one
    more command: the most cautious, and granted only while every command is (one
    owner-ruled `make test` must not lift `; cat ~/.aws/credentials` out of the sandbox)."""
    if first is None:
        return second
    if first.verdict == second.verdict == ALLOW:
        return first if first.granted <= second.granted else second
    return most_cautious(first, second)
