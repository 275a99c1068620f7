"""The Glob tool: files and directories matching a glob pattern, newest first.

The pattern (brace alternatives expanded, see `patterns`) is anchored at `path`, or used
as-is when absolute. One walk from the alternatives' common literal prefix matches every
entry against all alternatives at once (a small NFA over path segments), so `src/*.py`
reads only `src` and no path is reported twice. Symlinks are followed without loops
(`walk`). Results are absolute paths sorted by modification time, newest first (ties by
path); at most 1000 are returned, and then `truncated: true` replaces `count` (the shape
Grep uses; the original was unbounded) and a `note` tells the model how many matched.
A trailing `/` matches directories only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.base import WorkspaceTool
from gsv_core.node.tools.base import run_blocking
from gsv_core.node.tools.patterns import NameTest
from gsv_core.node.tools.patterns import PatternError
from gsv_core.node.tools.patterns import SegmentMatcher
from gsv_core.node.tools.patterns import compile_segments
from gsv_core.node.tools.patterns import expand_braces
from gsv_core.node.tools.patterns import has_magic
from gsv_core.node.tools.walk import TreeWalker

MAX_GLOB_MATCHES = 1000

State = tuple[int, int]  # (alternative, segment index)


class GlobParams(ToolParams):
    pattern: str = Field(description='E.g. "**/*.md".')
    path: str | None = Field(None, description="Directory (default: the workspace).")


class GlobTool(WorkspaceTool[GlobParams]):
    name = "Glob"
    capability = "filesystem.list"
    description = (
        "Find files and directories on this node matching a glob pattern (*, ?, [..], ** "
        "any depth, {a,b}; dotfiles included): absolute paths, newest first, at most 1000."
    )
    Params = GlobParams

    async def run(self, params: GlobParams) -> dict[str, Any]:
        if not params.pattern.strip():
            raise ToolFailed("pattern must not be empty")
        try:
            alternatives = expand_braces(params.pattern)
        except PatternError as exc:
            raise ToolFailed(str(exc)) from None
        return await run_blocking(lambda cancelled: self._glob(params, alternatives, cancelled))

    def _glob(
        self, params: GlobParams, alternatives: list[str], cancelled: threading.Event
    ) -> dict[str, Any]:
        base = self.workspace.resolve(params.path)
        _require_directory(base)
        plan = _plan(base, alternatives)
        root = self.workspace.resolve(plan.root)
        confine = self.workspace.allows_real if self.workspace.restrict else None
        paths, total = _search(plan, root, TreeWalker(cancelled, confine, sort=False))
        result: dict[str, Any] = {"pattern": params.pattern, "basePath": base, "matches": paths}
        if total > len(paths):
            result["truncated"] = True
            result["note"] = (
                f"{total} entries match; only the {len(paths)} newest are shown. "
                "Narrow the pattern or path to see the others"
            )
        else:
            result["count"] = len(paths)
        return result


def _require_directory(base: str) -> None:
    if not os.path.isdir(base):
        what = "is not a directory" if os.path.exists(base) else "does not exist"
        raise ToolFailed(f"path {what}: '{base}'")


@dataclass(frozen=True)
class _Plan:
    """Where to start walking and the per-alternative segment matchers below it."""

    root: str
    alternatives: list[list[SegmentMatcher]]
    dirs_only: list[bool]


def _plan(base: str, alternatives: list[str]) -> _Plan:
    absolute = [os.path.normpath(os.path.join(base, alt)).split(os.sep) for alt in alternatives]
    common = 0
    while (
        all(common < len(parts) - 1 and not _is_pattern(parts[common]) for parts in absolute)
        and len({parts[common] for parts in absolute}) == 1
    ):
        common += 1
    root = os.sep.join(absolute[0][:common]) or os.sep
    return _Plan(
        root=root,
        alternatives=[compile_segments("/".join(parts[common:])) for parts in absolute],
        dirs_only=[alt.endswith("/") for alt in alternatives],
    )


def _is_pattern(segment: str) -> bool:
    return segment == "**" or has_magic(segment)


def _search(plan: _Plan, root: str, walker: TreeWalker) -> tuple[list[str], int]:
    """The newest matches (at most MAX_GLOB_MATCHES) and how many there were in all."""
    newest = _Newest(MAX_GLOB_MATCHES)
    if not os.path.isdir(root):
        return [], 0
    states = _closure(plan, {(alt, 0) for alt in range(len(plan.alternatives))})
    machine = _Machine(plan)
    nodes = [machine.node(states)]  # nodes[d - 1]: the node for entries at depth d

    def descend(entry: os.DirEntry[str], depth: int) -> bool:
        following = nodes[depth - 1].step(entry.name)
        del nodes[depth:]
        if following is None:
            return False
        nodes.append(following)
        return True

    for entry, depth, directory in walker.walk(root, descend):
        del nodes[depth:]
        node = nodes[depth - 1]
        if (node.dir_ok if directory else node.file_ok)(entry.name):
            newest.add(entry)
    return newest.result()


class _Node:
    """What to do with the entries of a directory reached in a given set of states.

    Deciding whether an entry matches needs only the matchers of states one segment (or
    a trailing `**`) away from the end, so for `**/*.py` a file costs one regex match.
    """

    def __init__(self, machine: _Machine, states: frozenset[State]) -> None:
        self.machine = machine
        self.states = states
        any_file = any_dir = False
        file_tests: list[NameTest] = []
        dir_tests: list[NameTest] = []
        plan = machine.plan
        for alt, index in states:
            matchers = plan.alternatives[alt]
            if index == len(matchers):
                continue
            matcher, files_too = matchers[index], not plan.dirs_only[alt]
            if matcher is None and machine.rest_is_globstar(alt, index):
                any_dir = True
                any_file = any_file or files_too
            elif matcher is not None and machine.rest_is_globstar(alt, index + 1):
                dir_tests.append(matcher)
                if files_too:
                    file_tests.append(matcher)
        self.file_ok = _any_of(any_file, file_tests)
        self.dir_ok = _any_of(any_dir, dir_tests)

    def step(self, name: str) -> _Node | None:
        """The node for the entries of directory `name`, or None if nothing can match there."""
        plan = self.machine.plan
        following = _step(plan, self.states, name)
        if not any(index < len(plan.alternatives[alt]) for alt, index in following):
            return None
        return self.machine.node(following)


def _any_of(always: bool, tests: list[NameTest]) -> NameTest:
    if always:
        return lambda name: True
    if not tests:
        return lambda name: False
    if len(tests) == 1:
        return tests[0]
    return lambda name: any(test(name) for test in tests)


class _Machine:
    """The NFA over path segments, with one cached `_Node` per reachable state set."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self._nodes: dict[frozenset[State], _Node] = {}

    def node(self, states: set[State]) -> _Node:
        key = frozenset(states)
        if key not in self._nodes:
            self._nodes[key] = _Node(self, key)
        return self._nodes[key]

    def rest_is_globstar(self, alt: int, index: int) -> bool:
        """True when the segments from `index` on are empty or all `**`."""
        return all(matcher is None for matcher in self.plan.alternatives[alt][index:])


def _step(plan: _Plan, states: Iterable[State], name: str) -> set[State]:
    following: set[State] = set()
    for alt, index in states:
        matchers = plan.alternatives[alt]
        if index == len(matchers):
            continue
        matcher = matchers[index]
        if matcher is None:
            following.add((alt, index))  # `**` swallows this name and stays
        elif matcher(name):
            following.add((alt, index + 1))
    return _closure(plan, following)


def _closure(plan: _Plan, states: set[State]) -> set[State]:
    """Add the states reached by letting each `**` match zero segments."""
    closed = set(states)
    for alt, index in states:
        matchers = plan.alternatives[alt]
        while index < len(matchers) and matchers[index] is None:
            index += 1
            closed.add((alt, index))
    return closed


class _Newest:
    """The `limit` most recently modified paths seen, without holding every match."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._kept: list[tuple[int, str]] = []

    def add(self, entry: os.DirEntry[str]) -> None:
        self.total += 1
        self._kept.append((-_mtime_ns(entry), entry.path))
        if len(self._kept) >= 2 * self.limit:
            self._kept = sorted(self._kept)[: self.limit]

    def result(self) -> tuple[list[str], int]:
        kept = sorted(self._kept)[: self.limit]
        return [path for _, path in kept], self.total


def _mtime_ns(entry: os.DirEntry[str]) -> int:
    for follow in (True, False):  # a dangling symlink still has its own mtime
        try:
            return entry.stat(follow_symlinks=follow).st_mtime_ns
        except OSError:
            continue
    return 0
