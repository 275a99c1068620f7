"""Discovery over a real workspace directory (global + agent-local skills) and the config
policy of `skills.entries`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gsv_core.config import validate_config
from gsv_core.errors import InvalidParams
from gsv_core.skills.discovery import scan_skills
from gsv_core.skills.manifest import Requirements
from gsv_core.skills.policy import DISABLED_REASON
from gsv_core.skills.policy import Skill
from gsv_core.skills.policy import apply_policy
from gsv_core.workspace.backend import FilesystemBackend
from tests.skills.conftest import skill_text
from tests.skills.conftest import write_skill


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


def scan(root: Path, agent: str = "main") -> dict[str, Any]:
    return {s.key: s for s in scan_skills(FilesystemBackend(root), agent)}


def policy(root: Path, entries: dict[str, Any], agent: str = "main") -> dict[str, Skill]:
    files = scan_skills(FilesystemBackend(root), agent)
    return {s.file.key: s for s in apply_policy(files, entries)}


def test_global_and_agent_skills_are_found_and_agent_copies_win(root: Path) -> None:
    """An agent's own skills/x shadows the global skills/x; other skills show from both."""
    write_skill(root, "shared", skill_text(description="global version"))
    write_skill(root, "only-global", skill_text(description="g"))
    write_skill(root, "shared", skill_text(description="agent version"), agent="main")
    write_skill(root, "mine", skill_text(description="m"), agent="main")
    found = scan(root)
    assert sorted(found) == ["mine", "only-global", "shared"]
    shared = found["shared"]
    assert shared.manifest.description == "agent version" and shared.source == "agent"
    assert shared.location == "agents/main/skills/shared/SKILL.md"
    assert shared.read_path == "skills/shared/SKILL.md"
    assert found["only-global"].location == "skills/only-global/SKILL.md"


def test_another_agents_skills_are_not_seen(root: Path) -> None:
    """Skills under agents/other/ belong to that agent only."""
    write_skill(root, "theirs", skill_text(), agent="other")
    assert scan(root) == {}
    assert list(scan(root, "other")) == ["theirs"]


def test_folders_without_skill_md_and_stray_files_are_ignored(root: Path) -> None:
    """Only skills/<name>/SKILL.md counts."""
    (root / "skills" / "empty").mkdir(parents=True)
    (root / "skills" / "README.md").write_text("not a skill")
    (root / "skills" / "docs").mkdir()
    (root / "skills" / "docs" / "notes.md").write_text("no SKILL.md here")
    assert scan(root) == {}


def test_a_malformed_skill_is_reported_with_its_problem_not_raised(root: Path) -> None:
    """Bad YAML, bad bytes and an escaping symlink each give a skill with `problem`; the
    good skill next to them is unaffected."""
    write_skill(root, "good", skill_text(description="fine"))
    write_skill(root, "bad-yaml", "---\nname: [oops\n---\nbody\n")
    bad_bytes = write_skill(root, "bad-bytes", "x")
    bad_bytes.write_bytes(b"\xff\xfe not utf-8")
    outside = root.parent / "outside.md"
    outside.write_text(skill_text())
    (root / "skills" / "linked").mkdir()
    os.symlink(outside, root / "skills" / "linked" / "SKILL.md")
    found = scan(root)
    assert found["good"].problem is None
    assert "invalid YAML frontmatter" in found["bad-yaml"].problem
    assert found["bad-yaml"].name == "bad-yaml" and found["bad-yaml"].manifest is None
    assert found["bad-bytes"].problem == "SKILL.md is not UTF-8 text"
    assert "outside its workspace" in found["linked"].problem


def test_a_huge_skill_file_is_refused(root: Path) -> None:
    """SKILL.md over 256 KiB is reported, not parsed."""
    write_skill(root, "huge", "x" * (256 * 1024 + 1))
    assert "larger than 256 KiB" in scan(root)["huge"].problem


def test_entries_disable_force_always_and_override_requirements(root: Path) -> None:
    """enabled false hides; always forces; `requires` lists replace the skill's own."""
    write_skill(root, "hidden", skill_text())
    write_skill(root, "forced", skill_text())
    write_skill(root, "tuned", skill_text(bins=["tmux"], env=["TERM"]))
    entries = {
        "hidden": {"enabled": False},
        "forced": {"always": True},
        "tuned": {"requires": {"bins": ["screen"], "os": ["macos"]}},
    }
    skills = policy(root, entries)
    assert not skills["hidden"].enabled and not skills["hidden"].usable
    assert skills["forced"].always and skills["forced"].usable
    assert skills["tuned"].requirements == Requirements(
        bins=("screen",), env=("TERM",), os=("macos",)
    )
    assert DISABLED_REASON == "disabled by skills.entries policy"


def test_entries_are_found_by_skill_name_then_folder(root: Path) -> None:
    """An entry keyed by the frontmatter name wins over one keyed by the folder name."""
    write_skill(root, "folder", skill_text(name="pretty"))
    by_folder = policy(root, {"folder": {"enabled": False}})
    assert not by_folder["folder"].enabled
    both = policy(root, {"folder": {"enabled": False}, "pretty": {"always": True}})
    assert both["folder"].enabled and both["folder"].always


def test_a_bad_requirement_override_fails_closed(root: Path) -> None:
    """An override naming an unknown capability makes the skill unusable, with the reason."""
    write_skill(root, "tuned", skill_text())
    skills = policy(root, {"tuned": {"requires": {"capabilities": ["warp.drive"]}}})
    problem = skills["tuned"].problem or ""
    assert not skills["tuned"].usable
    assert problem.startswith("skills.entries.tuned: invalid requirements")


def test_config_validation_refuses_unknown_entry_keys_and_wrong_types() -> None:
    """skills.entries.<name> is typed: unknown keys and non-boolean `enabled` are 400s."""
    with pytest.raises(InvalidParams, match=r"skills\.entries\.x\.enable is not a config key"):
        validate_config({"skills": {"entries": {"x": {"enable": False}}}})
    with pytest.raises(InvalidParams, match=r"skills\.entries\.x\.enabled"):
        validate_config({"skills": {"entries": {"x": {"enabled": "no"}}}})
    ok = validate_config({"skills": {"entries": {"x": {"requires": {"bins": ["git"]}}}}})
    assert ok.skills.entries["x"].requires is not None
