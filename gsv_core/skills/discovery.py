"""Finding an agent's skills in the workspace: `skills/{name}/SKILL.md` in the global area
and `agents/{agentId}/skills/{name}/SKILL.md` for the agent's own copies, which shadow a
global skill of the same folder name (as the workspace tools' virtual `skills/` paths show).

`scan_skills()` is blocking storage I/O (run it in a thread). A skill that cannot be
read or parsed is still returned, with `problem` saying why, so status reports can show
it as ineligible; nothing here raises for one bad skill.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from gsv_core.errors import GsvError
from gsv_core.skills.manifest import SkillManifest
from gsv_core.skills.manifest import SkillManifestError
from gsv_core.skills.manifest import parse_manifest
from gsv_core.workspace.backend import StorageBackend
from gsv_core.workspace.paths import SKILLS_DIR
from gsv_core.workspace.paths import agent_root
from gsv_core.workspace.paths import join

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024


@dataclass(frozen=True)
class SkillFile:
    """One discovered skill: where it is and what it declares (or why it is unusable)."""

    key: str  # its folder name
    location: str  # storage key of its SKILL.md
    source: Literal["agent", "global"]
    manifest: SkillManifest | None
    problem: str | None = None

    @property
    def name(self) -> str:
        return self.manifest.name if self.manifest else self.key

    @property
    def read_path(self) -> str:
        """The path the agent reads it by (virtual `skills/...`, own copy first)."""
        return join(SKILLS_DIR, self.key, SKILL_FILE)


def scan_skills(backend: StorageBackend, agent_id: str) -> list[SkillFile]:
    """Every skill the agent sees, agent copies first, sorted by name then folder."""
    found: dict[str, SkillFile] = {}
    areas: tuple[tuple[str, Literal["agent", "global"]], ...] = (
        (join(agent_root(agent_id), SKILLS_DIR), "agent"),
        (SKILLS_DIR, "global"),
    )
    for area, source in areas:
        for key in _folders(backend, area):
            if key not in found and (skill := _load(backend, area, key, source)) is not None:
                found[key] = skill
    return sorted(found.values(), key=lambda s: (s.name, s.key))


def _folders(backend: StorageBackend, area: str) -> list[str]:
    try:
        listing = backend.list(area)
    except GsvError as exc:  # e.g. the skills folder is a link leading out
        log.warning("skills folder %s skipped: %s", area, exc.message)
        return []
    return listing.directories if listing else []


def _load(
    backend: StorageBackend, area: str, key: str, source: Literal["agent", "global"]
) -> SkillFile | None:
    """The skill in `area/key`, None when the folder holds no SKILL.md."""
    location = join(area, key, SKILL_FILE)
    try:
        found = backend.read(location)
    except (GsvError, OSError) as exc:
        reason = exc.message if isinstance(exc, GsvError) else (exc.strerror or str(exc))
        return SkillFile(key, location, source, None, f"cannot read {SKILL_FILE}: {reason}")
    if found is None:
        return None
    data = found[0]
    if len(data) > MAX_SKILL_BYTES:
        problem = f"{SKILL_FILE} is larger than {MAX_SKILL_BYTES // 1024} KiB"
        return SkillFile(key, location, source, None, problem)
    try:
        manifest = parse_manifest(data.decode("utf-8"), key)
    except UnicodeDecodeError:
        return SkillFile(key, location, source, None, f"{SKILL_FILE} is not UTF-8 text")
    except SkillManifestError as exc:
        log.info("skill %s is unusable: %s", location, exc.message)
        return SkillFile(key, location, source, None, exc.message)
    return SkillFile(key, location, source, manifest)
