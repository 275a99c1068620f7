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

    @property
    def needs_human(self) -> bool:
        return self.verdict == ASK


def most_cautious(first: Decision, second: Decision) -> Decision:
    return second if SEVERITY[second.verdict] > SEVERITY[first.verdict] else first
