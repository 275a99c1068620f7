"""The bundled skills: valid SKILL.md files, seeded into the global area once, never
overwriting or resurrecting what the user changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.skills.bundled import BUNDLED_SKILLS
from gsv_core.skills.bundled import bundled_skills
from gsv_core.skills.bundled import seed_bundled
from gsv_core.skills.manifest import parse_manifest
from gsv_core.workspace.backend import FilesystemBackend


@pytest.fixture
def backend(tmp_path: Path) -> FilesystemBackend:
    return FilesystemBackend(tmp_path / "workspace")


def skill_file(backend: FilesystemBackend, name: str) -> Path:
    return Path(backend.root) / "skills" / name / "SKILL.md"


def test_every_bundled_skill_parses_with_a_description_and_requirements() -> None:
    """Each shipped SKILL.md names itself after its folder, describes itself and says
    what a node needs for it."""
    texts = bundled_skills()
    assert tuple(texts) == BUNDLED_SKILLS == ("gsv-cli", "tmux", "git-commit")
    for name, text in texts.items():
        manifest = parse_manifest(text, name)
        assert manifest.name == name and len(manifest.description) > 40
        assert manifest.requirements.bins and "shell.exec" in manifest.requirements.capabilities
        assert not manifest.always


def test_seeding_writes_each_skill_once(backend: FilesystemBackend, tmp_path: Path) -> None:
    """The first seed writes all bundled skills; the next one writes nothing."""
    state = tmp_path / "state.json"
    assert seed_bundled(backend, state) == list(BUNDLED_SKILLS)
    assert skill_file(backend, "tmux").read_text() == bundled_skills()["tmux"]
    assert seed_bundled(backend, state) == []


def test_user_edits_and_deletions_survive_new_versions(
    backend: FilesystemBackend, tmp_path: Path
) -> None:
    """An edited copy is never overwritten and a deleted one never comes back, even when
    a newer gsv ships different texts; an untouched copy is upgraded."""
    state = tmp_path / "state.json"
    seed_bundled(backend, state, {"a": "v1 a", "b": "v1 b", "c": "v1 c"})
    skill_file(backend, "a").write_text("my own a")
    skill_file(backend, "b").unlink()
    written = seed_bundled(backend, state, {"a": "v2 a", "b": "v2 b", "c": "v2 c"})
    assert written == ["c"]
    assert skill_file(backend, "a").read_text() == "my own a"
    assert not skill_file(backend, "b").exists()
    assert skill_file(backend, "c").read_text() == "v2 c"


def test_a_users_skill_with_a_bundled_name_is_left_alone(
    backend: FilesystemBackend, tmp_path: Path
) -> None:
    """A skill the user had before the bundled one arrived is theirs, also on upgrades."""
    state = tmp_path / "state.json"
    path = skill_file(backend, "tmux")
    path.parent.mkdir(parents=True)
    path.write_text("my tmux notes")
    assert seed_bundled(backend, state, {"tmux": "v1"}) == []
    assert seed_bundled(backend, state, {"tmux": "v2"}) == []
    assert path.read_text() == "my tmux notes"


def test_an_unreadable_state_file_never_overwrites_existing_skills(
    backend: FilesystemBackend, tmp_path: Path
) -> None:
    """A corrupt state file is replaced; existing files stay as they are."""
    state = tmp_path / "state.json"
    seed_bundled(backend, state, {"a": "v1"})
    skill_file(backend, "a").write_text("edited")
    state.write_text("{not json")
    assert seed_bundled(backend, state, {"a": "v2", "b": "v1"}) == ["b"]
    assert skill_file(backend, "a").read_text() == "edited"


async def test_the_gateway_seeds_bundled_skills_on_first_start_only(tmp_path: Path) -> None:
    """A new gateway has the bundled skills in its global area; after the user edits one
    and restarts, the edit is still there."""
    config = ServerConfig(database=tmp_path / "data" / "gsv.db")
    tmux = tmp_path / "data" / "workspace" / "skills" / "tmux" / "SKILL.md"
    async with serve(config, port=0):
        assert tmux.read_text() == bundled_skills()["tmux"]
    tmux.write_text("---\ndescription: mine\n---\n")
    async with serve(config, port=0) as gw:
        assert tmux.read_text() == "---\ndescription: mine\n---\n"
        status = await gw.gateway.skills.status("main")
    assert [s.name for s in status.skills] == ["git-commit", "gsv-cli", "tmux"]
    assert next(s for s in status.skills if s.name == "tmux").description == "mine"
