"""What no mode and no rule may allow: stopping gsv's own processes, and reading or
writing gsv's secrets -- the secret store, the database with its WAL and SHM files, the
config file.

A word touches a secret when it names it (absolute, relative to the working directory,
`~` or `$HOME`, or as a pattern that matches it), and covers it when it names a
directory above it. Covering is refused too, except for programs that only look at
names and sizes (`ls ~`, `du -sh ~`): `grep -r KEY ~`, `tar czf - ~` and
`cp -r ~/.local/share/gsv x` would read the files inside.

This is a static check of what the line says. In `allowlist` mode anything it cannot
see through (a variable, an interpreter) asks anyway; in `denylist` and `off` mode a
line built to hide a path (`python3 -c` with the name spelled in pieces) is beyond it.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gsv_core.approval.shell import is_pattern
from gsv_core.paths import GsvPaths

SECRETS = "touches gsv's secret files (secret store, database, config)"
KILLS = "would stop the gsv gateway or node"
KILLERS = frozenset({"kill", "pkill", "killall", "skill"})
# programs that look at names and sizes, never contents: they may name a directory
# above the secrets (`ls ~`)
NAMES_ONLY = frozenset({"ls", "du", "df", "stat", "file", "tree", "cd", "pushd", "realpath",
    "readlink", "basename", "dirname", "pwd", "echo", "printf", "test", "[", "which", "type",
    "find"})  # fmt: skip
RECURSIVE_SEARCHERS = frozenset({"rg", "ag", "ack", "grep", "egrep", "fgrep"})
# a process's entries under /proc/PID that a path may pass through: root is followed (it
# is `/`); the links lead to places gsv cannot see (its cwd, its open files, including the
# gateway's database), and environ and mem hold what it was given and keeps (the
# gateway's provider keys when they come from its environment)
PROC_LINKS = ("root", "cwd", "fd", "map_files", "environ", "mem")
# links among /proc's own entries to a directory elsewhere: `/proc/net` is `self/net` and
# `/proc/thread-self` is `PID/task/TID`, so a `..` after them climbs from there
# (`/proc/net/../environ` is the reader's own environment)
PROC_DIR_LINKS = ("net", "thread-self")
_WILDCARDS = re.compile(r"\[[^]]*\]|[*?]")
MAX_PLACES = 8  # directories a line's shell may be in; beyond, one of them is unknown
# tails matched anywhere in a word, whatever the root (a node's paths may differ)
TAILS = ("gsv/secrets.toml", "gsv/gsv.db")


# where a path leads on this machine's disk (the node's, `gsv_core/node/guard.py`): for a
# path, or a pattern's matches, the real paths that a symlink on the way makes others
Disk = Callable[[str, bool], Iterable[str]]


@dataclass(frozen=True)
class Protected:
    pids: frozenset[int] = frozenset()
    secret_paths: frozenset[str] = frozenset()  # never read or written


def protected_files(paths: GsvPaths, database: Path | str, pids: Iterable[int]) -> Protected:
    """gsv's secrets on this machine: secret store, database (+ WAL/SHM/journal), config."""
    db = str(database)
    secret = {str(paths.secrets_file), str(paths.config_file), db, f"{db}-wal", f"{db}-shm",
              f"{db}-journal", *TAILS}  # fmt: skip
    return Protected(frozenset(pids), frozenset(secret))


class SecretCheck:
    """Judges words against the protected paths, resolving relative ones against `cwd`.
    After a `cd` it cannot follow (`cd ~/.c*/gsv`, `popd`) the directory is unknown:
    then a relative word naming a secret file's name touches it, and a searcher given
    no path covers it. So is `~-` (bash's $OLDPWD) before any `cd`.

    A `cd` may also leave the shell where it was: when it fails (`cd /nowhere; cat x`),
    or runs in a subshell, a pipe or the background (`(cd /tmp); cat x`). Then a word
    is judged from every directory the shell may be in (`others`); after `cd X && ...`
    only from X until the `&&` chain ends.

    With `disk` (on the node) a word is also judged where it leads: `cat notes` with
    `notes -> ~/.config/gsv/secrets.toml` touches the secret store; `linked` then holds
    the word and its real path."""

    def __init__(self, protected: Protected, cwd: str | None, disk: Disk | None = None) -> None:
        self.protected = protected
        self.disk = disk
        self.linked: tuple[str, str] | None = None
        # compared without case: on macOS (and Windows) file systems `~/.CONFIG/GSV/...`
        # is the same file; on Linux a name differing in case only is refused needlessly
        self.absolute, self.names = _layout(protected)
        self._anywhere = tuple(p.casefold() for p in protected.secret_paths)
        self.cwd = _norm(cwd) if cwd else None
        self.lost = False  # a `cd` went somewhere unknown
        self.previous: str | None = None  # `~-` and `cd -`; unknown until a `cd`
        self.others: list[str | None] = []  # other directories the shell may be in
        self.failed: list[str | None] = []  # where it is if the `&&` chain's cd failed

    def touches(self, word: str, glob: bool = False) -> bool:
        """`word` names a secret file (or could, as a pattern)."""
        if not word:
            return False
        folded = word.casefold()
        if any(p in folded for p in self._anywhere):
            return True
        return any(
            self._touches(word, glob, cwd, lost) or self._leads(word, glob, cwd, self._touches)
            for cwd, lost in self._places()
        )

    def covers(self, word: str, glob: bool = False) -> bool:
        """`word` names a directory above a secret file (or could, as a pattern)."""
        return any(
            self._covers(word, glob, cwd, lost) or self._leads(word, glob, cwd, self._covers)
            for cwd, lost in self._places()
        )

    def _leads(
        self, word: str, glob: bool, cwd: str | None, judge: Callable[[str, bool, None, bool], bool]
    ) -> bool:
        """`judge` (`_touches` or `_covers`) of where `word` leads on the disk, when a
        symlink on the way makes it another path."""
        disk = self.disk
        joined = self._joined(word, cwd) if disk is not None and word else None
        if disk is None or joined is None:
            return False
        for real in disk(joined, glob):
            if judge(real, False, None, False):
                self.linked = (word, real)
                return True
        return False

    def _places(self) -> list[tuple[str | None, bool]]:
        """Each directory the shell may be in, and whether it is unknown."""
        if not self.others:
            return [(self.cwd, self.lost)]
        return [(self.cwd, self.lost), *((d, d is None) for d in self.others)]

    def _touches(self, word: str, glob: bool, cwd: str | None, lost: bool) -> bool:
        resolved = self.resolve(word, cwd)
        if resolved is None:
            unknown = lost or word.startswith("~-")
            return unknown and posixpath.basename(word).casefold() in self.names
        if _through_proc(resolved, glob):
            return True
        resolved = resolved.casefold()
        if glob:
            return any(fnmatch.fnmatchcase(p, resolved) for p in self.absolute)
        return any(resolved == p or resolved.startswith(p + "-") for p in self.absolute)

    def _covers(self, word: str, glob: bool, cwd: str | None, lost: bool) -> bool:
        resolved = self.resolve(word, cwd) if word else None
        if resolved is None:
            return word.startswith("~-") or (lost and word.rstrip("/") in (".", ".."))
        if _through_proc(resolved, glob) or _above_proc_links(resolved, glob):
            return True
        resolved = resolved.casefold()
        if glob:
            return any(fnmatch.fnmatchcase(d, resolved) for p in self.absolute for d in _dirs(p))
        prefix = resolved.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.absolute)

    def resolve(self, word: str, cwd: str | None) -> str | None:
        joined = self._joined(word, cwd)
        return None if joined is None else _norm(joined)

    def _joined(self, word: str, cwd: str | None) -> str | None:
        """The absolute path `word` names from `cwd`, `..` and links not yet resolved."""
        if "HOME" in word:
            home = os.path.expanduser("~")
            word = word.replace("${HOME}", home).replace("$HOME", home)
        if word.startswith(("~+", "~-")):  # bash's $PWD and $OLDPWD
            directory = cwd if word[1] == "+" else self.previous
            rest = word[2:]
            if directory is None or (rest and not rest.startswith("/")):
                return None
            return directory + rest
        if word.startswith("~"):
            word = os.path.expanduser(word)  # (`~nobody/x` stays as written, as in bash)
        if word.startswith("/"):
            return word
        if cwd is None or "$" in word:
            return None
        return posixpath.join(cwd, word)

    def chain_ends(self) -> None:
        """A command not joined by `&&`: it runs even if the chain's `cd` failed."""
        self.others.extend(self.failed)
        self.failed.clear()

    def change_dir(self, argv: tuple[str, ...], unsure: bool, shared: bool = True) -> None:
        """Follow `cd [-L|-P|-e|-@]... [--] DIR`, `cd -` and `pushd DIR` for later relative
        words (`cd ~/.config/gsv && cat secrets.toml`). `unsure` (a pattern, a variable, a
        wrapper that may run another `cd`), `popd`, `pushd` of a stack entry and extra
        operands lose the directory."""
        program, args = posixpath.basename(argv[0]), list(argv[1:])
        options = set("LPe@") if program == "cd" else set()
        while args and len(args[0]) > 1 and args[0][0] == "-" and set(args[0][1:]) <= options:
            args.pop(0)
        dashed = args[:1] == ["-"]
        unknown = bool(args) and args[0][:1] == "-" and args[0] not in ("-", "--")
        if args[:1] == ["--"]:
            args.pop(0)
        target = "~-" if dashed else args[0] if args else "~"
        # popd, and pushd without a directory or with a stack entry (+N, -N), rotate the
        # directory stack; its entries are not followed
        stacked = program == "popd" or (program == "pushd" and (not args or args[0][:1] in "+-"))
        unsure = unsure or unknown or stacked or len(args) > 1
        followed = None if unsure else self.resolve(target, self.cwd)
        # it may fail, and outside the line's own shell it lasts only in its subshell
        (self.failed if shared else self.others).append(None if self.lost else self.cwd)
        if len(self.others) + len(self.failed) > MAX_PLACES:
            self.others, self.failed = [None], []
        self.previous, self.cwd = self.cwd, followed
        self.lost = followed is None


@functools.lru_cache(maxsize=16)
def _layout(protected: Protected) -> tuple[tuple[str, ...], frozenset[str]]:
    """The absolute secret paths and their file names, case folded (kept: read on every
    call)."""
    absolute = tuple(p.casefold() for p in protected.secret_paths if p.startswith("/"))
    return absolute, frozenset(posixpath.basename(p) for p in absolute)


def kills_gsv(argv: tuple[str, ...], pids: frozenset[int]) -> bool:
    """`kill PID` of a gsv process, `kill -1`/`0` (every process), `pkill -f gsv`."""
    if os.path.basename(argv[0]) not in KILLERS:
        return False
    targets = [w for w in argv[1:] if not w.startswith("-") or w == "-1"]
    mine = {str(pid) for pid in pids}
    return any(t in mine or t in ("-1", "0") or "gsv" in t.lower() for t in targets)


def _norm(path: str) -> str:
    """normpath, except under /proc, where the kernel follows a link before a `..` after
    it: `/proc/PID/root` (and `/proc/PID/task/TID/root`) is `/` (`/proc/self/root/../home/u`
    is `/home/u`, not `/proc/self/home/u`), and a `..` after another link (a process's
    `cwd` or `fd/N`, `/proc/net`, `/proc/thread-self`, or a pattern that may name one) is
    kept: where it climbs to is not on the line, so the path stays one through /proc."""
    # only a path naming /proc, or a pattern that may, is read part by part
    if not path.startswith("/") or not ("proc" in path or is_pattern(path)):
        return posixpath.normpath(path) if path else path
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if _climbs_from_a_link(parts):
                parts.append(part)
            elif parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
            if _proc_link(parts) == "root":
                parts = []
    return "/" + "/".join(parts)


def _matches(name: str, part: str) -> bool:
    """`part` is `name`, or a pattern that may be."""
    return fnmatch.fnmatchcase(name, part)


def _climbs_from_a_link(parts: list[str]) -> bool:
    """A `..` after `parts` leaves from where a /proc link leads, not from `parts`."""
    if len(parts) < 2 or not _matches("proc", parts[0]):
        return False
    if ".." in parts:  # climbing already
        return True
    if len(parts) == 2 and any(_matches(name, parts[1]) for name in PROC_DIR_LINKS):
        return True
    return _proc_link(parts, _matches) is not None


def _proc_link(parts: list[str], match: Callable[[str, str], bool] = str.__eq__) -> str | None:
    """Which of a process's entries (PROC_LINKS) `/`-separated `parts` pass through:
    `/proc/self/cwd/x` passes through `cwd`. `match(name, part)` compares
    one name with one part (a pattern's part, for globs)."""
    if not parts or not match("proc", parts[0]):
        return None
    for index in (2, 4):  # /proc/PID/LINK, /proc/PID/task/TID/LINK
        if len(parts) > index and (index == 2 or match("task", parts[2])):
            found = next((n for n in PROC_LINKS if match(n, parts[index])), None)
            if found:
                return found
    return None


def _through_proc(resolved: str, glob: bool) -> bool:
    """A path through another process's working directory, open files, mapped files,
    environment or memory (or, as a pattern, any of them), or climbing with `..` from a
    /proc link: gsv cannot tell where it leads, or it holds what a process keeps to
    itself."""
    if not glob and not resolved.startswith("/proc/"):
        return False
    parts = [p for p in resolved.split("/") if p]
    match = _matches if glob else str.__eq__
    if ".." in parts and match("proc", parts[0]):
        return True
    return _proc_link(parts, match) is not None


def _above_proc_links(resolved: str, glob: bool) -> bool:
    """`/proc`, a process's folder (`/proc/PID`, `/proc/self`, `/proc/thread-self`), its
    `task` folder and a thread's (`/proc/PID/task/TID`): each holds the entries of
    PROC_LINKS (`environ`, `mem`, `fd/`, `cwd` ...), which a program reading a folder's
    contents (`grep -r`, `tar`, `diff -r`) reads too, as files above gsv's secrets."""
    parts = [p for p in resolved.split("/") if p]
    match = _matches if glob else str.__eq__
    if not parts or len(parts) > 4 or not match("proc", parts[0]):
        return False
    if len(parts) > 1 and not _a_process(parts[1], glob):
        return False
    if len(parts) > 2 and not match("task", parts[2]):
        return False
    return len(parts) < 4 or _a_process(parts[3], glob)


def _a_process(part: str, glob: bool) -> bool:
    """`part` names a process or a thread under /proc (`1234`, `self`, `thread-self`), or
    may, as a pattern: what is left of it without wildcards and `[...]` sets is digits."""
    if not glob:
        return part.isdigit() or part in ("self", "thread-self")
    if _matches("self", part) or _matches("thread-self", part):
        return True
    literal = _WILDCARDS.sub("", part)
    return not literal or literal.isdigit()


def _dirs(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]
