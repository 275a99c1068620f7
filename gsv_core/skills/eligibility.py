"""Whether the agent can use a skill, and on which nodes.

A skill is eligible when some connected node meets all of its requirements: every
capability, one of the listed operating systems, every environment variable name, every
binary in `bins` and at least one in `anyBins` (binaries as the node's probes answered,
see `bincache`). A skill without requirements needs no node (it is eligible on the
gateway alone); an `always` skill is eligible whatever it declares. When no node
qualifies, `reasons` says for each node what it lacks. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gsv_core.skills.manifest import Requirements
from gsv_core.skills.policy import DISABLED_REASON
from gsv_core.skills.policy import Skill

SHELL_EXEC = "shell.exec"
NO_NODES = "no connected nodes"


@dataclass(frozen=True)
class SkillHost:
    """A connected node as eligibility sees it (from its connect-time runtime)."""

    node_id: str
    capabilities: tuple[str, ...] = ()
    os: str | None = None
    env: tuple[str, ...] = ()
    role: str = "execution"
    probe_error: str | None = None  # why its last bin probe failed, if it did

    @property
    def can_probe_bins(self) -> bool:
        # bins are looked up by the node's shell; a node without one cannot tell
        return SHELL_EXEC in self.capabilities


@dataclass(frozen=True)
class Verdict:
    eligible: bool
    hosts: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()


def evaluate(
    skill: Skill, hosts: list[SkillHost], bins: Mapping[str, Mapping[str, bool]]
) -> Verdict:
    """The skill's verdict over the connected `hosts`; `bins[nodeId]` is what that node
    answered about binaries (absent: not asked yet)."""
    if not skill.enabled:
        return Verdict(False, reasons=(DISABLED_REASON,))
    if skill.problem is not None:
        return Verdict(False, reasons=(skill.problem,))
    needs = skill.requirements
    if needs.empty:
        return Verdict(True)
    misses = {host.node_id: lacks(host, needs, bins.get(host.node_id, {})) for host in hosts}
    matching = tuple(node_id for node_id, lacked in misses.items() if not lacked)
    if skill.always or matching:
        return Verdict(True, matching)
    if not hosts:
        return Verdict(False, reasons=(f"{NO_NODES}; it needs {describe(needs)}",))
    reasons = tuple(f"{node_id}: {'; '.join(lacked)}" for node_id, lacked in misses.items())
    return Verdict(False, reasons=reasons)


def lacks(host: SkillHost, needs: Requirements, found: Mapping[str, bool]) -> list[str]:
    """What `host` lacks for `needs`, in words (empty: it qualifies)."""
    problems: list[str] = []
    missing_caps = [c for c in needs.capabilities if c not in host.capabilities]
    if missing_caps:
        problems.append(f"lacks capabilities {', '.join(missing_caps)}")
    if needs.os and host.os not in needs.os:
        problems.append(f"runs {host.os or 'an unknown OS'}, needs {' or '.join(needs.os)}")
    missing_env = [name for name in needs.env if name not in host.env]
    if missing_env:
        problems.append(f"lacks env {', '.join(missing_env)}")
    problems += _bin_problems(host, needs, found)
    return problems


def _bin_problems(host: SkillHost, needs: Requirements, found: Mapping[str, bool]) -> list[str]:
    problems: list[str] = []
    unknown = [b for b in (*needs.bins, *needs.any_bins) if b not in found]
    missing = [b for b in needs.bins if found.get(b) is False]
    if missing:
        problems.append(f"lacks bins {', '.join(missing)}")
    any_missing = needs.any_bins and all(found.get(b) is False for b in needs.any_bins)
    if any_missing:
        problems.append(f"lacks all of {', '.join(needs.any_bins)}")
    has_any = any(found.get(b) for b in needs.any_bins)
    if has_any:
        unknown = [b for b in unknown if b not in needs.any_bins]
    if unknown and not host.can_probe_bins:
        problems.append(f"cannot check bins {', '.join(unknown)} (no {SHELL_EXEC})")
    elif unknown and host.probe_error:
        problems.append(f"bins {', '.join(unknown)} unknown: probe failed ({host.probe_error})")
    elif unknown:
        problems.append(f"bins not checked yet: {', '.join(unknown)} (run `gsv skills update`)")
    return problems


def describe(needs: Requirements) -> str:
    """The requirements in words: "bins tmux; os linux or macos"."""
    parts = [
        ("capabilities", ", ".join(needs.capabilities)),
        ("os", " or ".join(needs.os)),
        ("env", ", ".join(needs.env)),
        ("bins", ", ".join(needs.bins)),
        ("one of", ", ".join(needs.any_bins)),
    ]
    return "; ".join(f"{label} {text}" for label, text in parts if text) or "nothing"


@dataclass(frozen=True)
class SkillStatus:
    """A skill with its verdict: one row of `skills.status` and of the prompt's list."""

    skill: Skill
    verdict: Verdict

    def to_wire(self) -> dict[str, object]:
        """One entry of the `skills.status` result (docs/protocol.md#methods)."""
        skill = self.skill
        return {
            "name": skill.name,
            "description": skill.description,
            "location": skill.file.location,
            "always": skill.always,
            "eligible": self.verdict.eligible,
            "eligibleHosts": list(self.verdict.hosts),
            "reasons": list(self.verdict.reasons),
            "requirements": skill.requirements.to_wire(),
        }
