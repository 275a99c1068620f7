"""The node's own check before it runs a tool: decisions are enforced where
the tool runs. Built-in protections (this node's processes, gsv's secret and config
files on this machine) always refuse. A call the default policy (allowlist mode) would
put before a human runs only with the gateway's approval binding for exactly these
arguments. The check also says which access the call gets: the sandbox, unless the
binding says the owner granted full access (approval/binding.py)."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from glob import iglob
from typing import Any

from gsv_core.approval.binding import SANDBOX
from gsv_core.approval.binding import verify
from gsv_core.approval.policy import ALLOW
from gsv_core.approval.policy import DENY
from gsv_core.approval.policy import SEVERITY
from gsv_core.approval.policy import SHELL_TOOLS
from gsv_core.approval.policy import WRITING_FILE_TOOLS
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.policy import Decision
from gsv_core.approval.protected import SECRETS
from gsv_core.approval.protected import protected_files
from gsv_core.errors import ToolFailed
from gsv_core.paths import resolve_paths

log = logging.getLogger(__name__)
LINKED_FILE_TOOLS = frozenset({"Read", "Write", "Edit", "Grep"})
# paths of one shell line (its words, and the files its patterns match) the guard
# resolves on this disk, a few microseconds each: more than a line of the longest the
# node reads (64 KiB) can name, unless its patterns match that many files; a line naming
# more is refused (split it)
MAX_LINE_PATHS = 32_768


class NodeGuard:
    def __init__(self, node_id: str, workspace: str, key: str | None = None) -> None:
        self.node_id = node_id
        self.workspace = os.path.normpath(workspace)
        # the workspace resolved too, or a workspace named through a link would make every
        # file in it look outside (`_refuse_what_the_disk_shows`)
        self.real_workspace = os.path.realpath(self.workspace)
        self.key = key  # from hello-ok; None: the gateway does not sign (older gateway)
        paths = resolve_paths()
        protected = protected_files(paths, paths.database, {os.getpid()})
        # the defaults: allowlist mode. The gateway's own mode and rules are its to
        # apply; whatever it approves arrives with a binding for exactly that call
        self.policy = ApprovalPolicy.from_config({}, protected)

    def check(self, tool: str, args: Any, binding: Any) -> str:
        """The access this call may run with here (SANDBOX or FULL); ToolFailed when it
        may not run. Without a valid binding it is the sandbox, whatever the call."""
        arguments = args if isinstance(args, dict) else {}
        facts = CallFacts(f"{self.node_id}__{tool}", tool, self.node_id, arguments, self.workspace)
        decision = self.policy.decide(facts)
        if decision.verdict != DENY:
            self._refuse_what_the_disk_shows(facts, decision)
        if decision.verdict == DENY:
            raise ToolFailed(f"refused on this node: {decision.reason}")
        if decision.verdict == ALLOW and tool not in SHELL_TOOLS:
            return SANDBOX  # (only a command's access differs: no binding to check)
        granted = verify(self.key, tool, arguments, binding) if self.key is not None else None
        if granted is not None:
            return granted
        if decision.verdict == ALLOW or self.key is None:
            return SANDBOX
        log.warning("refused %s: no approval for exactly this call", tool)
        raise ToolFailed(
            f"refused on this node: {decision.reason} and the gateway's approval does not "
            "cover exactly this call"
        )

    def _refuse_what_the_disk_shows(self, facts: CallFacts, decision: Decision) -> None:
        """Refuse a file tool's call when this machine's disk makes it more dangerous than
        its path as written: a symlink on the way leads somewhere the policy refuses or
        asks about (a link in the workspace to gsv's secret store, to a directory outside,
        to a repository's `.git`), or a write lands in a git repository's own directory.
        A shell line's words are judged where they lead too (`_refuse_linked_words`).

        The gateway judged the path as written and cannot see this disk, and it signs an
        approval binding for every call it lets through, asked or not: a binding cannot
        mean a human saw where the path really leads. So what would ask is refused, with
        the real path named, so the agent can ask for that path instead."""
        self._refuse_linked_words(facts)
        path = facts.args.get("path")
        if facts.bare not in LINKED_FILE_TOOLS or not isinstance(path, str) or not path:
            return
        # resolved also when the file does not exist yet: a Write through a linked
        # directory would create it wherever that directory leads
        named = os.path.normpath(os.path.join(self.workspace, os.path.expanduser(path)))
        real = os.path.realpath(named)
        if real != named:
            seen = replace(facts, args={**facts.args, "path": real}, workspace=self.real_workspace)
            decided = self.policy.decide(seen)
            if decided.verdict == DENY:
                raise ToolFailed(f"refused on this node: {decided.reason}")
            if SEVERITY[decided.verdict] > SEVERITY[decision.verdict]:
                raise ToolFailed(
                    f"refused on this node: {path} leads through a symlink to {real}, which "
                    f"{decided.reason}; name that path so the owner is asked"
                )
        # (only an allowed write needs the walk up: one that asks has a human's eyes on it)
        writes = facts.bare in WRITING_FILE_TOOLS and decision.verdict == ALLOW
        repository = _repository_above(real) if writes else None
        if repository is not None:
            raise ToolFailed(
                f"refused on this node: {path} is inside the git repository directory "
                f"{repository}, whose files decide what git runs; ask the owner to change it"
            )

    def _refuse_linked_words(self, facts: CallFacts) -> None:
        """Refuse a shell line (Bash, Process write/submit) a word of which, on this disk,
        leads through a symlink to gsv's secrets: `cat notes` with a `notes` that came
        with a cloned project and links to the secret store, the database, the config or
        a process's `environ`. Named in the refusal by its real path."""
        found = self.policy.linked_secret(facts, _LinePaths())
        if found is not None:
            word, real = found
            raise ToolFailed(
                f"refused on this node: {word} leads through a symlink to {real}, which {SECRETS}"
            )


class _LinePaths:
    """Where the paths of one shell line lead on this disk (`protected.Disk`): the real
    path of each that a symlink on the way makes another; for a pattern, of each file it
    matches. At most MAX_LINE_PATHS a line: beyond, the line is refused."""

    def __init__(self) -> None:
        self.left = MAX_LINE_PATHS
        self.known: dict[tuple[str, bool], list[str]] = {}
        self.directories: dict[str, str] = {}  # a directory's real path, by its own

    def __call__(self, path: str, glob: bool) -> list[str]:
        found = self.known.get((path, glob))
        if found is None:
            found = self.known[(path, glob)] = self._real_paths(path, glob)
        return found

    def _real_paths(self, path: str, glob: bool) -> list[str]:
        found = []
        try:
            for each in iglob(path) if glob else (path,):
                real = self._real(each)
                if real != os.path.normpath(each):
                    found.append(real)
        except (OSError, ValueError):  # a NUL byte, a name too long: no such file
            pass
        return found

    def _real(self, path: str) -> str:
        """os.path.realpath, with the directory's real path kept for the next word in
        it: one lstat for a word in a known directory."""
        self.left -= 1
        if self.left < 0:
            raise ToolFailed(
                f"refused on this node: the line names more than {MAX_LINE_PATHS} paths, "
                "more than the node checks for symlinks; split it"
            )
        head, tail = os.path.split(path)
        if tail in ("", ".", ".."):
            return os.path.realpath(path)
        directory = self.directories.get(head)
        if directory is None:
            directory = self.directories[head] = os.path.realpath(head)
        named = os.path.join(directory, tail)
        return os.path.realpath(named) if os.path.islink(named) else named


def _repository_above(path: str) -> str | None:
    """The nearest directory above `path` that git would take for a repository's own
    directory (`.git`, or a bare repository whatever its name): a `HEAD` file with
    `objects/` and `refs/`, or with a `commondir` file (a worktree's), as git's
    `is_git_directory` tests it."""
    directory = os.path.dirname(path)
    while True:
        if os.path.isfile(os.path.join(directory, "HEAD")) and (
            os.path.isfile(os.path.join(directory, "commondir"))
            or all(os.path.isdir(os.path.join(directory, d)) for d in ("objects", "refs"))
        ):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
