"""A skill's SKILL.md: the YAML frontmatter and what it declares.

    ---
    name: tmux
    description: Run long jobs in tmux sessions on a node.
    always: false
    bins: [tmux]              # all of these on one node's PATH
    anyBins: [vim, nvim]      # at least one of these
    env: [GITHUB_TOKEN]       # environment variables set on that node
    os: [linux, macos]        # the node's operating system is one of these
    capabilities: [shell.exec]
    ---
    # body: what the agent reads when the skill applies

The requirement lists may also sit under `requires:`, or inside the original's
`metadata: {gsv|openclaw|clawdbot: {emoji, requires: {...}}}` (a mapping or a JSON string,
trailing commas allowed). Where several forms give the same list, the top-level key wins,
then `requires`, then `metadata`. `parse_manifest()` is pure and raises
`SkillManifestError` with a message fit for a user; callers report the skill as
ineligible with that reason instead of failing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import yaml

from gsv_core.errors import InvalidParams
from gsv_core.protocol.schemas.nodes import BIN_NAME
from gsv_core.protocol.schemas.nodes import CAPABILITY_IDS

DESCRIPTION_MAX = 200
METADATA_NAMESPACES = ("gsv", "openclaw", "clawdbot")
REQUIREMENT_KEYS = ("bins", "anyBins", "env", "os", "capabilities")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# the node daemon reports platform.system() lowercased, with darwin as macos
_OS_ALIASES = {"darwin": "macos", "mac": "macos", "osx": "macos", "win32": "windows"}


class SkillManifestError(InvalidParams):
    """A SKILL.md whose frontmatter cannot be used."""


@dataclass(frozen=True)
class Requirements:
    """What a node must offer for a skill; every list empty means none."""

    bins: tuple[str, ...] = ()
    any_bins: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    os: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.bins or self.any_bins or self.env or self.os or self.capabilities)

    def to_wire(self) -> dict[str, list[str]]:
        """SkillRequirementSnapshot: the lists under their wire names."""
        return {
            "bins": list(self.bins),
            "anyBins": list(self.any_bins),
            "env": list(self.env),
            "os": list(self.os),
            "capabilities": list(self.capabilities),
        }


@dataclass(frozen=True)
class SkillManifest:
    name: str
    description: str
    always: bool = False
    requirements: Requirements = field(default_factory=Requirements)
    emoji: str | None = None
    body: str = ""


def parse_manifest(text: str, default_name: str) -> SkillManifest:
    """The manifest of a SKILL.md; a missing name defaults to the folder name and a
    missing description to the body's first paragraph."""
    header, body = split_frontmatter(text)
    data = _load_yaml(header) if header is not None else {}
    name = _optional_text(data, "name") or default_name
    description = _optional_text(data, "description") or first_paragraph(body)
    metadata = _namespace(data.get("metadata"))
    return SkillManifest(
        name=name,
        description=description,
        always=_flag(data.get("always", False), "always"),
        requirements=requirements_from(_requirement_sources(data, metadata)),
        emoji=_optional_text(metadata, "emoji"),
        body=body,
    )


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter text or None, body). Line endings are normalised to `\\n`."""
    normal = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not normal.startswith("---\n") and normal.rstrip() != "---":
        return None, normal
    lines = normal.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]).lstrip("\n")
    raise SkillManifestError("frontmatter starts with --- but has no closing --- line")


def first_paragraph(body: str) -> str:
    """The body's first paragraph after any leading headings, on one line (<= 200 chars)."""
    lines: list[str] = []
    for line in body.split("\n"):
        stripped = line.strip()
        if not lines and (not stripped or stripped.startswith("#")):
            continue
        if not stripped:
            break
        lines.append(stripped)
    text = " ".join(lines)
    return text if len(text) <= DESCRIPTION_MAX else text[: DESCRIPTION_MAX - 3] + "..."


def requirements_from(sources: list[Mapping[str, Any]]) -> Requirements:
    """Requirements from mappings in priority order (first giving a key wins), checked."""

    def pick(key: str) -> tuple[str, ...]:
        for source in sources:
            if source.get(key) is not None:
                return _names(source[key], key)
        return ()

    return Requirements(
        bins=_checked(pick("bins"), "bins", BIN_NAME.match),
        any_bins=_checked(pick("anyBins"), "anyBins", BIN_NAME.match),
        env=_checked(pick("env"), "env", _ENV_NAME.match),
        os=tuple(dict.fromkeys(normalise_os(value) for value in pick("os"))),
        capabilities=_checked(pick("capabilities"), "capabilities", CAPABILITY_IDS.__contains__),
    )


def normalise_os(value: str) -> str:
    lowered = value.strip().lower()
    return _OS_ALIASES.get(lowered, lowered)


# -- pieces ---------------------------------------------------------------------------
def _load_yaml(header: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(header) if header.strip() else {}
    except yaml.YAMLError as exc:
        raise SkillManifestError(f"invalid YAML frontmatter: {_yaml_problem(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillManifestError("frontmatter must be a mapping of keys to values")
    return {str(key): value for key, value in data.items()}


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
    if mark is not None:
        # +2: the mark counts from 0 inside the block, which starts after the `---` line
        return f"{problem} (line {mark.line + 2}, column {mark.column + 1})"
    return str(problem)


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SkillManifestError(f"{key} must be text")
    text = " ".join(str(value).split())
    return text or None


def _flag(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SkillManifestError(f"{key} must be true or false, not {value!r}")


def _namespace(raw: Any) -> dict[str, Any]:
    """The first recognised namespace of `metadata` (a mapping or a JSON/YAML string)."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        raw = _relaxed_json(raw)
    if not isinstance(raw, dict):
        raise SkillManifestError("metadata must be a mapping")
    for namespace in METADATA_NAMESPACES:
        inner = raw.get(namespace)
        if inner is not None:
            if not isinstance(inner, dict):
                raise SkillManifestError(f"metadata.{namespace} must be a mapping")
            return inner
    return {}


def _relaxed_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:  # YAML flow syntax reads JSON with trailing commas
        return yaml.safe_load(text)
    except yaml.YAMLError:
        raise SkillManifestError("metadata is not valid JSON") from None


def _requirement_sources(
    data: Mapping[str, Any], metadata: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    sources: list[Mapping[str, Any]] = [data]
    for holder, where in ((data, "requires"), (metadata, "metadata requires")):
        block = holder.get("requires")
        if block is None:
            continue
        if not isinstance(block, dict):
            raise SkillManifestError(f"{where} must be a mapping of requirement lists")
        sources.append(block)
    return sources


def _names(value: Any, key: str) -> tuple[str, ...]:
    """A requirement list: a list of non-empty strings (a single string is a list of one)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        raise SkillManifestError(f"invalid requirements: {key} must be a list of names")
    return tuple(dict.fromkeys(v.strip() for v in items))


def _checked(names: tuple[str, ...], key: str, valid: Any) -> tuple[str, ...]:
    bad = [name for name in names if not valid(name)]
    if bad:
        raise SkillManifestError(f"invalid requirements: {key} has an invalid name {bad[0]!r}")
    return names
