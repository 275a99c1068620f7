"""The Grep tool: lines matching a Python regular expression in the files under a path.

The rules live in `textsearch`; this module validates the request, picks a backend (rg
when it is on PATH, unless told otherwise, falling back to Python when rg cannot take the
pattern), and shapes the result: at most 100 matches ordered by path then line, with
`truncated: true` instead of `count` when there were more, lines cut to 200 characters;
a `note` tells the model about either cap. Memory stays bounded whatever the file size
or line length (`textstream`, `ripgrep`).
Because both backends produce the same matches in the same order and the first 100 are
kept, the result does not depend on the backend.
The search itself (`search_job`) runs in a child process (`searchworker`): a regex that
backtracks for ever would otherwise hold the GIL and freeze the node. A cancelled call
kills it, and so does GREP_DEADLINE.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import threading
import warnings
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from pydantic import Field

from gsv_core.errors import ToolFailed
from gsv_core.node.tools.base import ToolParams
from gsv_core.node.tools.base import WorkspaceTool
from gsv_core.node.tools.patterns import PatternError
from gsv_core.node.tools.patterns import expand_braces
from gsv_core.node.tools.patterns import name_matcher
from gsv_core.node.tools.ripgrep import RgUnusable
from gsv_core.node.tools.ripgrep import rg_matches
from gsv_core.node.tools.searchworker import SearchWorkers
from gsv_core.node.tools.textsearch import MAX_LINE_CHARS
from gsv_core.node.tools.textsearch import SKIPPED_DIRS
from gsv_core.node.tools.textsearch import GrepQuery
from gsv_core.node.tools.textsearch import Match
from gsv_core.node.tools.textsearch import literal_needle
from gsv_core.node.tools.textsearch import order_key
from gsv_core.node.tools.textsearch import python_matches
from gsv_core.node.tools.textsearch import secret_files
from gsv_core.node.tools.walk import TreeWalker
from gsv_core.node.tools.workspace import Workspace

MAX_GREP_MATCHES = 100
GREP_DEADLINE = 300.0  # seconds, like Bash's default timeout


class GrepParams(ToolParams):
    pattern: str = Field(description="Regular expression.")
    path: str | None = Field(None, description="Directory or file (default: the workspace).")
    include: str | None = Field(None, description='File-name glob, e.g. "*.{py,md}".')


class GrepTool(WorkspaceTool[GrepParams]):
    name = "Grep"
    capability = "text.search"
    description = (
        "Search file contents on this node with a Python regular expression, following "
        "symlinks, skipping binary files and .git: up to 100 matching lines (path, line, "
        "first 200 characters) by path and line."
    )
    Params = GrepParams

    def __init__(
        self,
        workspace: Workspace,
        *,
        use_rg: bool | None = None,
        deadline: float = GREP_DEADLINE,
    ) -> None:
        """`use_rg`: None uses rg when it is on PATH, False never, True requires it."""
        super().__init__(workspace)
        self.rg = shutil.which("rg") if use_rg is not False else None
        if use_rg and self.rg is None:
            raise ValueError("use_rg=True but rg is not on PATH")
        self.secrets = secret_files()
        self.workers = SearchWorkers(f"{__name__}:search_job", deadline=deadline)

    async def run(self, params: GrepParams) -> dict[str, Any]:
        if not params.pattern:
            raise ToolFailed("pattern must not be empty")
        _compile(params.pattern)  # a bad pattern is refused without a child process
        job = {
            "params": params.model_dump(),
            "root": self.workspace.root,
            "restrict": self.workspace.restrict,
            "rg": self.rg,
            "secrets": sorted(self.secrets),
        }
        result: dict[str, Any] = await self.workers.run(job)
        return result

    async def close(self) -> None:
        await self.workers.close()


def search_job(job: dict[str, Any]) -> dict[str, Any]:
    """In the child process: the Grep result for a job built by `GrepTool.run`."""
    workspace = Workspace(job["root"], restrict=job["restrict"])
    search = GrepSearch(workspace, job["rg"], frozenset(job["secrets"]))
    params = GrepParams.model_validate(job["params"])
    return search.grep(params, _compile(params.pattern), threading.Event())


class GrepSearch:
    """One Grep over a workspace, with rg (when given) or Python."""

    def __init__(self, workspace: Workspace, rg: str | None, secrets: frozenset[str]) -> None:
        self.workspace = workspace
        self.rg = rg
        self.secrets = secrets

    def grep(
        self, params: GrepParams, regex: re.Pattern[str], cancelled: threading.Event
    ) -> dict[str, Any]:
        query = self._query(params, regex)
        matches, truncated = self._search(query, cancelled)
        result: dict[str, Any] = {
            "pattern": params.pattern,
            "basePath": query.base,
            "matches": [match.to_wire() for match in matches],
        }
        if truncated:
            result["truncated"] = True
        else:
            result["count"] = len(matches)
        if note := _note(matches, truncated):
            result["note"] = note
        return result

    def _query(self, params: GrepParams, regex: re.Pattern[str]) -> GrepQuery:
        base = self.workspace.resolve(params.path)
        if not os.path.exists(base):
            raise ToolFailed(f"path does not exist: '{base}'")
        needle = literal_needle(params.pattern)
        if not params.include:
            return GrepQuery(regex, base, needle=needle)
        try:
            globs = expand_braces(params.include)
        except PatternError as exc:
            raise ToolFailed(str(exc)) from None
        return GrepQuery(regex, base, name_matcher(globs), tuple(globs), needle)

    def _search(self, query: GrepQuery, cancelled: threading.Event) -> tuple[list[Match], bool]:
        if self.rg is not None:
            try:
                return _first(query, rg_matches(self.rg, query, self._confined(query), cancelled))
            except RgUnusable:
                pass
        confine = self.workspace.allows_real if self.workspace.restrict else None
        walker = TreeWalker(cancelled, confine, SKIPPED_DIRS, hidden=self.secrets)
        return _first(query, python_matches(query, walker))

    def _confined(self, query: GrepQuery) -> Callable[[str], bool]:
        """For rg results: never gsv's secret files (rg follows symlinks to them too), and
        in a restricted workspace no symlink between the base and the file may point
        outside."""
        if not self.workspace.restrict:
            return lambda path: os.path.realpath(path) not in self.secrets
        cache: dict[str, bool] = {}

        def allowed(path: str) -> bool:
            if os.path.realpath(path) in self.secrets:
                return False
            current = query.base
            for part in os.path.relpath(path, query.base).split(os.sep):
                current = os.path.join(current, part)
                if current not in cache:
                    link = os.path.islink(current)
                    cache[current] = not link or self.workspace.allows_real(
                        os.path.realpath(current)
                    )
                if not cache[current]:
                    return False
            return True

        return allowed


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        with warnings.catch_warnings():
            # "[[:alpha:]]" and friends warn (FutureWarning) rather than fail.
            warnings.simplefilter("ignore")
            return re.compile(pattern)
    except re.error as exc:
        raise ToolFailed(f"Invalid regex pattern '{pattern}': {exc}") from None


def _note(matches: list[Match], truncated: bool) -> str | None:
    """What the model must know about the caps that shaped this result."""
    parts = []
    if truncated:
        parts.append(
            f"only the first {MAX_GREP_MATCHES} matches are shown; narrow the pattern, "
            "path or include to see the rest"
        )
    if cut := sum(match.cut for match in matches):
        parts.append(
            f"{cut} matching line(s) are longer than {MAX_LINE_CHARS} characters and "
            "shown cut; Read them with offset and limit"
        )
    return "; ".join(parts) or None


def _first(query: GrepQuery, matches: Iterator[Match]) -> tuple[list[Match], bool]:
    """The first 100 matches and whether there were more; stops the backend early."""
    try:
        found = list(itertools.islice(matches, MAX_GREP_MATCHES + 1))
    finally:
        close = getattr(matches, "close", None)
        if close is not None:
            close()
    found.sort(key=lambda match: order_key(query.base, match))
    return found[:MAX_GREP_MATCHES], len(found) > MAX_GREP_MATCHES
