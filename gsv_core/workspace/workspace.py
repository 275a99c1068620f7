"""`Workspace`: the agent workspace API behind the `workspace.*` methods, the native
`gsv__*File` tools, prompt assembly, transcript archives and extracted memories.

Every operation checks the agent id and the path (`paths`), seeds a new agent's files
from the templates on its first use, resolves virtual `skills/` paths, and then does its
storage work in one thread hop (the backend is blocking I/O). Writes, edits, appends and
deletes of one file are serialised, so two edits never lose one another's change.
Results are wire-shaped dicts (docs/protocol.md, docs/tools.md).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import TypeVar

from gsv_core.errors import Forbidden
from gsv_core.errors import GsvError
from gsv_core.errors import InternalError
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.workspace.backend import Stat
from gsv_core.workspace.backend import StorageBackend
from gsv_core.workspace.excerpts import ReadQuery
from gsv_core.workspace.excerpts import excerpt
from gsv_core.workspace.fresh_prompts import FreshPrompts
from gsv_core.workspace.locks import KeyLocks
from gsv_core.workspace.paths import SKILLS_DIR
from gsv_core.workspace.paths import Location
from gsv_core.workspace.paths import agent_root
from gsv_core.workspace.paths import content_type
from gsv_core.workspace.paths import is_skills_path
from gsv_core.workspace.paths import join
from gsv_core.workspace.paths import locations
from gsv_core.workspace.paths import normalise_path
from gsv_core.workspace.paths import validate_agent_id
from gsv_core.workspace.paths import write_location
from gsv_core.workspace.prompt import PromptFiles
from gsv_core.workspace.prompt import prompt_file_paths
from gsv_core.workspace.templates import workspace_templates

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 16 * 1024 * 1024
T = TypeVar("T")


class Workspace:
    """One workspace directory (or other backend) holding every agent's files."""

    def __init__(self, backend: StorageBackend, templates: Mapping[str, str] | None = None):
        self.backend = backend
        self._templates = workspace_templates() if templates is None else templates
        self._seeded: set[str] = set()
        self._seed_lock = threading.Lock()
        self._locks = KeyLocks()
        # agent -> {key: (mtime_ns, size, text)}: prompt files re-read only when changed
        self._prompt_cache: dict[str, dict[str, tuple[int, int, str]]] = {}
        # and looked at only when their folders changed (fresh_prompts.py)
        self._fresh = FreshPrompts()
        # told (agent id, path) after every write, edit, append and delete through here
        # (the memory index re-reads a changed note: gsv_core/memory/service.py)
        self.listeners: list[Callable[[str, str], None]] = []

    # -- the API ------------------------------------------------------------------------
    async def list(self, agent_id: str, path: str = "") -> dict[str, Any]:
        """`{path, files, directories}` of a folder (virtual `skills/` folders merged)."""
        norm = normalise_path(path)
        return await self._in_thread(agent_id, lambda: self._list(agent_id, norm))

    async def read(
        self, agent_id: str, path: str = "", query: ReadQuery | None = None
    ) -> dict[str, Any]:
        """A file's content (or the part `query` asks for), or a folder's listing."""
        norm = normalise_path(path)
        wanted = query or ReadQuery()
        wanted.check()
        return await self._in_thread(agent_id, lambda: self._read(agent_id, norm, wanted))

    async def write(self, agent_id: str, path: str, content: str) -> dict[str, Any]:
        norm, target = _target(agent_id, path)
        data = _encode(content)
        async with self._locks.hold(target.key):
            stat = await self._in_thread(agent_id, lambda: self.backend.write(target.key, data))
        self._changed(agent_id, norm)
        result: dict[str, Any] = {"path": norm, "size": stat.size, "written": True}
        if target.source == "agent":
            result.update(resolvedPath=target.key, resolvedSource=target.source)
        return result

    async def edit(
        self, agent_id: str, path: str, old: str, new: str, replace_all: bool = False
    ) -> dict[str, Any]:
        """Replace exact text; without `replace_all` it must occur exactly once. A global
        skill's edit is saved as the agent's own copy."""
        if not old:
            raise InvalidParams("oldString must not be empty")
        norm, target = _target(agent_id, path)
        async with self._locks.hold(target.key):
            result = await self._in_thread(
                agent_id, lambda: self._edit(agent_id, norm, old, new, replace_all)
            )
        self._changed(agent_id, norm)
        return result

    async def delete(self, agent_id: str, path: str) -> dict[str, Any]:
        norm, target = _target(agent_id, path)
        async with self._locks.hold(target.key):
            await self._in_thread(agent_id, lambda: self._delete(norm, target))
        self._changed(agent_id, norm)
        return {"path": norm, "deleted": True}

    async def append(self, agent_id: str, path: str, block: str) -> None:
        """Add a markdown block after the file's content (created when missing)."""
        norm, target = _target(agent_id, path)

        def append() -> None:
            found = self.backend.read(target.key)
            existing = _decode(found[0], norm).rstrip() if found else ""
            self.backend.write(target.key, _encode(f"{existing}\n\n{block}" if existing else block))

        async with self._locks.hold(target.key):
            await self._in_thread(agent_id, append)
        self._changed(agent_id, norm)

    async def write_bytes(self, agent_id: str, path: str, data: bytes) -> str:
        """Store binary data (transcript archives); returns its workspace-root key."""
        _, target = _target(agent_id, path)
        async with self._locks.hold(target.key):
            await self._in_thread(agent_id, lambda: self.backend.write(target.key, data))
        return target.key

    async def prompt_files(
        self, agent_id: str, main_session: bool, today: dt.date, guest: bool = False
    ) -> PromptFiles:
        """The files the system prompt injects (a guest's run: fewer): the last read of
        them while nothing changed in their folders (fresh_prompts.py), else read in one
        thread hop (each file re-read only when its mtime or size changed)."""
        paths = prompt_file_paths(main_session, today, guest)
        key = (agent_id, tuple(paths))
        kept = self._fresh.get(key)
        if kept is not None:
            return PromptFiles(agent_id, today, kept)
        reading = self._fresh.begin()
        folders, files = await self._in_thread(
            agent_id, lambda: self._watched_prompt_texts(agent_id, paths)
        )
        self._fresh.keep(key, reading, folders, files)
        return PromptFiles(agent_id, today, files)

    def close(self) -> None:
        """Stop watching the prompt files' folders (the gateway stops)."""
        self._fresh.close()

    def _changed(self, agent_id: str, path: str) -> None:
        for listener in self.listeners:
            listener(agent_id, path)

    # -- in the thread ------------------------------------------------------------------
    async def _in_thread(self, agent_id: str, work: Callable[[], T]) -> T:
        validate_agent_id(agent_id)

        def run() -> T:
            try:
                self._seed(agent_id)
                return work()
            except OSError as exc:
                log.warning("workspace storage of agent %s failed: %s", agent_id, exc)
                raise InternalError(f"workspace storage failed: {exc.strerror or exc}") from None

        return await asyncio.to_thread(run)

    def _seed(self, agent_id: str) -> None:
        """First use of an agent: write the template files (never again once its folder
        exists, so files the agent deleted stay deleted)."""
        if agent_id in self._seeded:
            return
        with self._seed_lock:
            if agent_id in self._seeded:
                return
            root = agent_root(agent_id)
            if self.backend.stat(root) is None:
                for name, text in self._templates.items():
                    self.backend.write(join(root, name), text.encode("utf-8"))
                log.info("seeded the workspace of agent %s", agent_id)
            self._seeded.add(agent_id)

    def _list(self, agent_id: str, path: str) -> dict[str, Any]:
        listing = self._listing(agent_id, path)
        if listing is not None:
            return listing
        if any(self.backend.stat(loc.key) for loc in locations(agent_id, path)):
            raise InvalidParams(f"{path} is a file, not a folder; read it instead")
        raise NotFound(f"Not found: {path}")

    def _read(self, agent_id: str, path: str, query: ReadQuery) -> dict[str, Any]:
        if path:
            for location in locations(agent_id, path):
                found = self.backend.read(location.key)
                if found is not None:
                    return _file_result(path, location, *found, query)
        listing = self._listing(agent_id, path)
        if listing is None:
            raise NotFound(f"Not found: {path}")
        if not query.whole:
            raise InvalidParams(
                f"{path or '/'} is a folder: startLine, endLine, search and jsonPath apply to files"
            )
        return listing

    def _listing(self, agent_id: str, path: str) -> dict[str, Any] | None:
        found = [
            listing
            for location in locations(agent_id, path)
            if (listing := self.backend.list(location.key)) is not None
        ]
        if not found and path:
            return None  # the root always lists, even before anything is in it
        files = {name for listing in found for name in listing.files}
        folders = {name for listing in found for name in listing.directories}
        shared = self.backend.list(SKILLS_DIR) if not path else None
        if shared and (shared.files or shared.directories):
            folders.add(SKILLS_DIR)  # global skills show through the virtual folder
        return {
            "path": path or "/",
            "files": [join(path, name) for name in sorted(files)],
            "directories": [join(path, name) + "/" for name in sorted(folders)],
        }

    def _edit(
        self, agent_id: str, path: str, old: str, new: str, replace_all: bool
    ) -> dict[str, Any]:
        source, data = self._existing_file(agent_id, path)
        text = _decode(data, path)
        count = text.count(old)
        if count == 0:
            raise InvalidParams(f"oldString not found in '{path}'")
        if count > 1 and not replace_all:
            raise InvalidParams(
                f"oldString found {count} times in '{path}'. "
                "Use replaceAll: true or provide a more specific oldString."
            )
        replaced = count if replace_all else 1
        target = write_location(agent_id, path)
        self.backend.write(target.key, _encode(text.replace(old, new, replaced)))
        return {
            "path": path,
            "replacements": replaced,
            "edited": True,
            "resolvedSource": source.source,
            "resolvedPath": source.key,
        }

    def _existing_file(self, agent_id: str, path: str) -> tuple[Location, bytes]:
        for location in locations(agent_id, path):
            found = self.backend.read(location.key)
            if found is not None:
                return location, found[0]
        if self._listing(agent_id, path) is not None:
            raise InvalidParams(f"{path} is a folder, not a file")
        raise NotFound(f"File not found: {path}")

    def _delete(self, path: str, target: Location) -> None:
        stat = self.backend.stat(target.key)
        if stat is None:
            if is_skills_path(path) and self.backend.stat(path) is not None:
                raise Forbidden(
                    f"{path} is a global skill shared by every agent; only your own copies "
                    "under skills/ can be deleted"
                )
            raise NotFound(f"File not found: {path}")
        if stat.is_dir:
            raise InvalidParams(f"{path} is a folder; delete the files in it one by one")
        if not self.backend.delete(target.key):
            raise NotFound(f"File not found: {path}")

    def _watched_prompt_texts(
        self, agent_id: str, paths: Sequence[str]
    ) -> tuple[frozenset[str] | None, dict[str, str]]:
        """The prompt files' texts, their folders watched first (a change while they are
        read is heard of), or None for the folders when they could not be."""
        keys = {path: join(agent_root(agent_id), path) for path in paths}
        folders = None
        if self._fresh.watching:  # else their folders are not worked out for nothing
            folders = self._fresh.watch(self.backend.folders_of(list(keys.values())))
        return folders, self._prompt_texts(agent_id, keys)

    def _prompt_texts(self, agent_id: str, keys: Mapping[str, str]) -> dict[str, str]:
        """The prompt files' texts by path (`keys`: path -> workspace key)."""
        previous = self._prompt_cache.get(agent_id, {})
        cache: dict[str, tuple[int, int, str]] = {}
        texts: dict[str, str] = {}
        stats = self.backend.stat_many(list(keys.values()))
        for path, key in keys.items():
            try:
                # a key stat_many left out is refused: `stat` says why
                stat = stats[key] if key in stats else self.backend.stat(key)
                entry = self._prompt_text(key, stat, previous.get(key))
            except GsvError as exc:  # e.g. a symlink leading out: leave the file out
                log.warning("prompt file %s skipped: %s", key, exc.message)
                continue
            if entry is not None:
                cache[key] = entry
                if entry[2].strip():
                    texts[path] = entry[2]
        self._prompt_cache[agent_id] = cache
        return texts

    def _prompt_text(
        self, key: str, stat: Stat | None, cached: tuple[int, int, str] | None
    ) -> tuple[int, int, str] | None:
        if stat is None or stat.is_dir:
            return None
        if cached is not None and cached[:2] == (stat.mtime_ns, stat.size):
            return cached
        found = self.backend.read(key)
        if found is None:
            return None
        data, fresh = found
        return fresh.mtime_ns, fresh.size, data.decode("utf-8", errors="replace")


def _target(agent_id: str, path: str) -> tuple[str, Location]:
    """A path that must name a file, and where writing it goes."""
    norm = normalise_path(path)
    if not norm:
        raise InvalidParams("path must name a file, not the workspace root")
    if norm == SKILLS_DIR:
        raise InvalidParams("skills is the skills folder; name a file, e.g. skills/<name>/SKILL.md")
    return norm, write_location(agent_id, norm)


def _encode(content: str) -> bytes:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams("content is not valid Unicode text") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidParams(
            f"content is {len(data)} bytes; workspace files hold at most {MAX_FILE_BYTES}"
        )
    return data


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidParams(
            f"{path} is not a UTF-8 text file ({len(data)} bytes); only text can be read "
            "or edited here"
        ) from None


def _file_result(
    path: str, location: Location, data: bytes, stat: Stat, query: ReadQuery
) -> dict[str, Any]:
    text = _decode(data, path)
    part = {"content": text} if query.whole else excerpt(text, query, path)
    result: dict[str, Any] = {
        "path": path,
        **part,
        "size": stat.size,
        "lastModified": iso_time(stat.mtime_ns),
        "contentType": content_type(path),
    }
    if location.source != "workspace":
        result.update(resolvedPath=location.key, resolvedSource=location.source)
    return result


def iso_time(mtime_ns: int) -> str:
    """An mtime as ISO 8601 UTC with milliseconds, e.g. 2025-01-31T09:30:00.123Z."""
    moment = dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
