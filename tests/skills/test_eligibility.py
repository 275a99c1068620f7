"""Eligibility over nodes with different bins, env, OS and capabilities; the bin cache's
freshness window with an injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from gsv_core.skills.bincache import BinCache
from gsv_core.skills.discovery import SkillFile
from gsv_core.skills.eligibility import SkillHost
from gsv_core.skills.eligibility import Verdict
from gsv_core.skills.eligibility import evaluate
from gsv_core.skills.manifest import Requirements
from gsv_core.skills.manifest import SkillManifest
from gsv_core.skills.policy import Skill

ALL_CAPS = ("filesystem.read", "shell.exec", "text.search")
LINUX = SkillHost("lin", ALL_CAPS, "linux", ("HOME", "GITHUB_TOKEN"))
MAC = SkillHost("mac", ALL_CAPS, "macos", ("HOME",))
SEARCH_ONLY = SkillHost("search", ("text.search",), "linux", ("HOME",))
HOSTS = [LINUX, MAC, SEARCH_ONLY]
BINS = {"lin": {"git": True, "tmux": False, "vim": False}, "mac": {"git": True, "tmux": True}}


def skill(always: bool = False, enabled: bool = True, problem: str | None = None,
          **needs: Any) -> Skill:  # fmt: skip
    requirements = Requirements(**{k: tuple(v) for k, v in needs.items()})
    manifest = SkillManifest("s", "d", always, requirements)
    file = SkillFile("s", "skills/s/SKILL.md", "global", manifest)
    return Skill(file, enabled, always, requirements, problem)


@pytest.mark.parametrize(
    ("needs", "hosts"),
    [
        ({}, ()),
        ({"bins": ["git"]}, ("lin", "mac")),
        ({"bins": ["git", "tmux"]}, ("mac",)),
        ({"any_bins": ["tmux", "vim"]}, ("mac",)),
        ({"env": ["GITHUB_TOKEN"]}, ("lin",)),
        ({"os": ["macos"]}, ("mac",)),
        ({"os": ["linux", "macos"]}, ("lin", "mac", "search")),
        ({"capabilities": ["text.search"]}, ("lin", "mac", "search")),
        ({"capabilities": ["shell.exec"], "os": ["linux"]}, ("lin",)),
    ],
)
def test_eligible_hosts_are_the_nodes_meeting_every_requirement(
    needs: dict[str, list[str]], hosts: tuple[str, ...]
) -> None:
    """Each requirement kind filters the connected nodes; no requirements needs no node."""
    assert evaluate(skill(**needs), HOSTS, BINS) == Verdict(True, hosts)


@pytest.mark.parametrize(
    ("needs", "reasons"),
    [
        (
            {"bins": ["tmux"], "env": ["GITHUB_TOKEN"]},
            ["lin: lacks bins tmux", "mac: lacks env GITHUB_TOKEN",
             "search: lacks env GITHUB_TOKEN; cannot check bins tmux (no shell.exec)"],
        ),
        (
            {"os": ["windows"]},
            ["lin: runs linux, needs windows", "mac: runs macos, needs windows",
             "search: runs linux, needs windows"],
        ),
        (
            {"capabilities": ["filesystem.write"], "any_bins": ["vim", "nano"]},
            ["lin: lacks capabilities filesystem.write; bins not checked yet: nano (run `gsv skills update`)",
             "mac: lacks capabilities filesystem.write; bins not checked yet: vim, nano (run `gsv skills update`)",
             "search: lacks capabilities filesystem.write; cannot check bins vim, nano (no shell.exec)"],
        ),
    ],
)  # fmt: skip
def test_ineligible_skills_say_what_each_node_lacks(
    needs: dict[str, list[str]], reasons: list[str]
) -> None:
    """Reasons name every connected node and everything it lacks, in words."""
    verdict = evaluate(skill(**needs), HOSTS, BINS)
    assert verdict == Verdict(False, (), tuple(reasons))


def test_any_bins_all_missing_is_its_own_reason() -> None:
    """When every anyBins answer is no, the node 'lacks all of' them."""
    verdict = evaluate(skill(any_bins=["tmux", "vim"]), [LINUX], BINS)
    assert verdict.reasons == ("lin: lacks all of tmux, vim",)


def test_a_failed_probe_is_named_in_the_reason() -> None:
    """Unknown bins on a node whose probe failed show the failure."""
    broken = SkillHost("lin", ALL_CAPS, "linux", probe_error="node.probe timed out")
    verdict = evaluate(skill(bins=["jq"]), [broken], {})
    assert verdict.reasons == ("lin: bins jq unknown: probe failed (node.probe timed out)",)


def test_no_connected_nodes_explains_what_the_skill_needs() -> None:
    """Without nodes, a skill with requirements is ineligible and says what it needs."""
    verdict = evaluate(skill(bins=["git"], os=["linux"]), [], {})
    assert verdict == Verdict(False, (), ("no connected nodes; it needs os linux; bins git",))


def test_disabled_and_broken_skills_are_ineligible_with_their_reason() -> None:
    """Policy and parse problems come before any node check."""
    assert evaluate(skill(enabled=False), HOSTS, BINS).reasons == (
        "disabled by skills.entries policy",
    )
    assert evaluate(skill(problem="invalid YAML frontmatter: x"), HOSTS, BINS) == Verdict(
        False, (), ("invalid YAML frontmatter: x",)
    )


def test_always_skills_are_eligible_even_without_a_matching_node() -> None:
    """always forces eligibility; eligibleHosts still lists the nodes that qualify."""
    assert evaluate(skill(always=True, os=["windows"]), HOSTS, BINS) == Verdict(True, ())
    assert evaluate(skill(always=True, bins=["git"]), HOSTS, BINS) == Verdict(True, ("lin", "mac"))


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_bin_answers_are_fresh_within_the_window_and_stale_after() -> None:
    """A node's answers count as fresh for max_age_ms; then (and for never-asked bins)
    they are stale, while the old values stay known."""
    clock = Clock()
    cache = BinCache(clock)
    assert cache.stale("n1", ["git", "jq"], 60_000) == ["git", "jq"]
    cache.record("n1", {"git": True, "jq": False})
    clock.now += 60_000
    assert cache.stale("n1", ["git", "jq", "tmux"], 60_000) == ["tmux"]
    clock.now += 1
    assert cache.stale("n1", ["git"], 60_000) == ["git"]
    assert cache.get("n1").found() == {"git": True, "jq": False}
    assert cache.get("n1").updated_at == 1_000_000


def test_a_failed_probe_is_remembered_for_the_window_and_cleared_by_an_answer() -> None:
    """failed_recently holds for max_age_ms after a failure; an answer clears it."""
    clock = Clock()
    cache = BinCache(clock)
    cache.record_failure("n1", "timed out")
    assert cache.failed_recently("n1", 1000) and cache.get("n1").error == "timed out"
    clock.now += 1001
    assert not cache.failed_recently("n1", 1000)
    cache.record_failure("n1", "timed out")
    cache.record("n1", {"git": True})
    assert not cache.failed_recently("n1", 1000) and cache.get("n1").error is None
    assert cache.get("n2").found() == {} and cache.get("n2").updated_at is None
