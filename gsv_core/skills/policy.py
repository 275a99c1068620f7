"""Config policy over discovered skills: `skills.entries.<name>`.

An entry is looked up by the skill's name, then its folder name, then its storage key.
`enabled: false` hides the skill, `always` overrides the frontmatter, and each list under
`requires` replaces the skill's own list of that kind. A bad override fails closed: the
skill is kept but reported ineligible with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from gsv_core.config import SkillEntryConfig
from gsv_core.skills.discovery import SkillFile
from gsv_core.skills.manifest import Requirements
from gsv_core.skills.manifest import SkillManifestError
from gsv_core.skills.manifest import requirements_from

DISABLED_REASON = "disabled by skills.entries policy"


@dataclass(frozen=True)
class Skill:
    """A skill as the agent gets it: its file with the config policy applied."""

    file: SkillFile
    enabled: bool = True
    always: bool = False
    requirements: Requirements = field(default_factory=Requirements)
    problem: str | None = None  # unreadable, malformed or badly overridden

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def description(self) -> str:
        return self.file.manifest.description if self.file.manifest else ""

    @property
    def usable(self) -> bool:
        return self.enabled and self.problem is None


def apply_policy(files: list[SkillFile], entries: Mapping[str, Any]) -> list[Skill]:
    return [_apply(file, entries) for file in files]


def _apply(file: SkillFile, entries: Mapping[str, Any]) -> Skill:
    manifest = file.manifest
    base = Skill(
        file,
        always=manifest.always if manifest else False,
        requirements=manifest.requirements if manifest else Requirements(),
        problem=file.problem,
    )
    found = _entry(file, entries)
    if found is None:
        return base
    label, raw = found
    try:
        entry = SkillEntryConfig.model_validate(raw)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"]
        return replace(base, problem=f"skills.entries.{label} is invalid: {message}")
    always = entry.always if entry.always is not None else base.always
    try:
        requirements = _overridden(base.requirements, entry)
    except SkillManifestError as exc:
        return replace(base, enabled=entry.enabled, always=always,
                        problem=f"skills.entries.{label}: {exc.message}")  # fmt: skip
    return replace(base, enabled=entry.enabled, always=always, requirements=requirements)


def _entry(file: SkillFile, entries: Mapping[str, Any]) -> tuple[str, Any] | None:
    for label in (file.name, file.key, file.location):
        if label in entries:
            return label, entries[label]
    return None


def _overridden(base: Requirements, entry: SkillEntryConfig) -> Requirements:
    if entry.requires is None:
        return base
    overrides = entry.requires.model_dump(exclude_none=True)
    return requirements_from([overrides, base.to_wire()])
