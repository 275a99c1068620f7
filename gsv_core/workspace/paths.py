"""The workspace layout and the path rules every workspace access goes through.

Storage keys are `/`-separated and relative to the workspace directory:

    agents/{agentId}/...        one agent's files (SOUL.md, memory/, sessions/, skills/ ...)
    skills/{name}/SKILL.md      global skills, shared by every agent

Users and agents give paths relative to their agent root. `normalise_path()` refuses
anything that could leave it (`..`, absolute paths, backslashes, NUL and other control
characters) with a 400 that says why; symlinks are the backend's to check. Paths under
`skills/` are virtual: reads look at the agent's own copy first, then the global one,
while writes always land in the agent's copy (`locations()`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gsv_core.errors import InvalidParams

AGENTS_DIR = "agents"
SKILLS_DIR = "skills"
# atomic writes go through hidden temp files with this prefix: listings skip them and
# no path may name one
TEMP_PREFIX = ".gsv-tmp-"
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255

_AGENT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"[A-Za-z]:(/|$)")  # C:/x, C:

Source = Literal["workspace", "agent", "global"]


@dataclass(frozen=True)
class Location:
    """Where a workspace path is stored: its storage key and which copy it is."""

    key: str
    source: Source


def validate_agent_id(agent_id: str) -> str:
    """An agent id as the workspace accepts it: `[a-z0-9][a-z0-9_-]*`, at most 64 chars
    (the original used the RPC's agentId unchecked in storage keys)."""
    if not _AGENT_ID.fullmatch(agent_id):
        raise InvalidParams(
            f"invalid agentId {agent_id!r}: use lowercase letters, digits, '_' and '-', "
            "starting with a letter or digit, at most 64 characters"
        )
    return agent_id


def normalise_path(raw: str) -> str:
    """A workspace path relative to the agent root, checked and normalised: surrounding
    whitespace, empty and `.` segments and trailing slashes are dropped; `""` or `"/"`
    is the root (returned as `""`). Raises InvalidParams naming the problem."""
    path = raw.strip()
    if path in ("", "/"):
        return ""
    _refuse_unsafe_text(raw, path)
    segments = [s for s in path.split("/") if s not in ("", ".")]
    for segment in segments:
        _check_segment(raw, segment)
    return "/".join(segments)


def _refuse_unsafe_text(raw: str, path: str) -> None:
    if "\x00" in path:
        raise InvalidParams(f"invalid path {raw!r}: NUL bytes are not allowed")
    if _CONTROL.search(path):
        raise InvalidParams(f"invalid path {raw!r}: control characters are not allowed")
    if "\\" in path:
        raise InvalidParams(f"invalid path {raw!r}: backslashes are not allowed; use '/'")
    if path.startswith(("/", "~")) or _DRIVE.match(path):
        raise InvalidParams(
            f"invalid path {raw!r}: absolute paths are not allowed; give a path relative "
            "to the workspace root, e.g. SOUL.md or memory/"
        )
    if len(path) > MAX_PATH_CHARS:
        raise InvalidParams(f"invalid path: longer than {MAX_PATH_CHARS} characters")


def _check_segment(raw: str, segment: str) -> None:
    if segment == "..":
        raise InvalidParams(f"invalid path {raw!r}: path traversal ('..') is not allowed")
    if segment.startswith(TEMP_PREFIX):
        raise InvalidParams(f"invalid path {raw!r}: names starting {TEMP_PREFIX} are reserved")
    if len(segment.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise InvalidParams(f"invalid path {raw!r}: a name is longer than {MAX_NAME_BYTES} bytes")


def agent_root(agent_id: str) -> str:
    return f"{AGENTS_DIR}/{agent_id}"


def join(*parts: str) -> str:
    """Keys or paths joined with `/`, empty parts left out."""
    return "/".join(part for part in parts if part)


def is_skills_path(path: str) -> bool:
    return path == SKILLS_DIR or path.startswith(SKILLS_DIR + "/")


def locations(agent_id: str, path: str) -> list[Location]:
    """Where a (normalised) path is looked up, first match wins: the agent's own key, and
    for `skills/...` the global key after it."""
    own = Location(join(agent_root(agent_id), path), "workspace")
    if not is_skills_path(path):
        return [own]
    return [Location(own.key, "agent"), Location(path, "global")]


def write_location(agent_id: str, path: str) -> Location:
    """Where a write or delete of a (normalised) path goes: always the agent's own copy."""
    return locations(agent_id, path)[0]


def scope_of(key: str) -> str:
    """The directory a key must stay inside, even through symlinks: the agent root for
    `agents/{id}/...`, else the key's top-level directory (`skills`, `media` ...)."""
    parts = key.split("/")
    if parts[0] == AGENTS_DIR and len(parts) > 1:
        return join(parts[0], parts[1])
    return parts[0]


def parent_of(key: str) -> str:
    return key.rpartition("/")[0]


def content_type(path: str) -> str:
    """The Content-Type a file is stored with, by extension."""
    suffix = path.rpartition(".")[2].lower() if "." in path.rpartition("/")[2] else ""
    return _CONTENT_TYPES.get(suffix, "text/plain")


_CONTENT_TYPES = {
    "md": "text/markdown",
    "json": "application/json",
    "yaml": "text/yaml",
    "yml": "text/yaml",
    "gz": "application/gzip",
}
