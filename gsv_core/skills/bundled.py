"""The skills gsv ships (`bundled/{name}/SKILL.md`, package data) and their seeding into
the global skills area (`skills/{name}/SKILL.md`) when the gateway starts.

A bundled skill is written once. A small state file remembers what was written (a hash
per skill), so a skill the user deleted stays deleted, a skill the user edited is never
overwritten, and an untouched copy is upgraded when a newer gsv ships a new text.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from gsv_core.errors import GsvError
from gsv_core.fsmodes import write_private_file
from gsv_core.skills.discovery import SKILL_FILE
from gsv_core.workspace.backend import StorageBackend
from gsv_core.workspace.paths import SKILLS_DIR
from gsv_core.workspace.paths import join

log = logging.getLogger(__name__)

BUNDLED_SKILLS = ("gsv-cli", "tmux", "git-commit")


@functools.cache
def bundled_skills() -> Mapping[str, str]:
    """Skill name -> SKILL.md text of every bundled skill (read once)."""
    folder = resources.files("gsv_core.skills").joinpath("bundled")
    texts = {
        name: folder.joinpath(name, SKILL_FILE).read_text(encoding="utf-8")
        for name in BUNDLED_SKILLS
    }
    return MappingProxyType(texts)


def seed_bundled(
    backend: StorageBackend, state_path: Path, bundled: Mapping[str, str] | None = None
) -> list[str]:
    """Write the bundled skills the global area should get; returns the names written.
    Blocking I/O; a storage failure is logged and leaves the rest of the start alone."""
    texts = bundled_skills() if bundled is None else bundled
    state = _load_state(state_path)
    written: list[str] = []
    for name, text in texts.items():
        try:
            if _seed_one(backend, name, text, state):
                written.append(name)
        except (GsvError, OSError) as exc:
            log.warning("bundled skill %s not seeded: %s", name, exc)
    _save_state(state_path, state)
    if written:
        log.info("seeded bundled skills: %s", ", ".join(written))
    return written


def _seed_one(backend: StorageBackend, name: str, text: str, state: dict[str, str | None]) -> bool:
    """Seed or upgrade one skill, updating `state`; True when the file was written."""
    key = join(SKILLS_DIR, name, SKILL_FILE)
    found = backend.read(key)
    current = _digest(found[0]) if found is not None else None
    wanted = _digest(text.encode("utf-8"))
    if name not in state:
        if found is None:
            backend.write(key, text.encode("utf-8"))
            state[name] = wanted
            return True
        # a skill of that name was there first: it is the user's, never ours to change
        state[name] = wanted if current == wanted else None
        return False
    ours = state[name]
    if found is None or ours is None or current != ours or current == wanted:
        return False  # deleted, the user's own, edited by the user, or already current
    backend.write(key, text.encode("utf-8"))
    state[name] = wanted
    return True


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _load_state(path: Path) -> dict[str, str | None]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("bundled skills state %s unreadable (%s); starting afresh", path, exc)
        return {}
    seeded = raw.get("seeded") if isinstance(raw, dict) else None
    if not isinstance(seeded, dict):
        return {}
    return {str(k): v if isinstance(v, str) else None for k, v in seeded.items()}


def _save_state(path: Path, state: dict[str, str | None]) -> None:
    try:
        text = json.dumps({"seeded": state}, indent=2, sort_keys=True)
        write_private_file(path, text.encode("utf-8"))
    except OSError as exc:
        log.warning("bundled skills state %s not saved: %s", path, exc)
