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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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
# tails matched anywhere in a word, whatever the root (a node's paths may differ)
TAILS = ("gsv/secrets.toml", "gsv/gsv.db")


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
    After a `cd` it cannot follow (`cd -`, `cd ~/.c*/gsv`) the directory is unknown:
    then a relative word naming a secret file's name touches it, and a searcher given
    no path covers it."""

    def __init__(self, protected: Protected, cwd: str | None) -> None:
        self.protected = protected
        self.absolute, self.names = _layout(protected)
        self.cwd = _norm(cwd) if cwd else None
        self.lost = False  # a `cd` went somewhere unknown

    def touches(self, word: str, glob: bool = False) -> bool:
        """`word` names a secret file (or could, as a pattern)."""
        if not word:
            return False
        if any(p in word for p in self.protected.secret_paths):
            return True
        resolved = self.resolve(word)
        if resolved is None:
            return self.lost and posixpath.basename(word) in self.names
        if glob:
            return any(fnmatch.fnmatchcase(p, resolved) for p in self.absolute)
        return any(resolved == p or resolved.startswith(p + "-") for p in self.absolute)

    def covers(self, word: str, glob: bool = False) -> bool:
        """`word` names a directory above a secret file (or could, as a pattern)."""
        resolved = self.resolve(word) if word else None
        if resolved is None:
            return self.lost and word.rstrip("/") in (".", "..")
        if glob:
            return any(fnmatch.fnmatchcase(d, resolved) for p in self.absolute for d in _dirs(p))
        prefix = resolved.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.absolute)

    def resolve(self, word: str) -> str | None:
        if "HOME" in word:
            home = os.path.expanduser("~")
            word = word.replace("${HOME}", home).replace("$HOME", home)
        if word.startswith("~"):
            return _norm(os.path.expanduser(word))
        if word.startswith("/"):
            return _norm(word)
        if self.cwd is None or "$" in word:
            return None
        return _norm(posixpath.join(self.cwd, word))

    def change_dir(self, argv: tuple[str, ...], glob: bool) -> None:
        """Follow `cd` for later relative words (`cd ~/.config/gsv && cat secrets.toml`)."""
        target = argv[1] if len(argv) > 1 else "~"
        self.cwd = None if target == "-" or glob else self.resolve(target)
        self.lost = self.cwd is None


@functools.lru_cache(maxsize=16)
def _layout(protected: Protected) -> tuple[tuple[str, ...], frozenset[str]]:
    """The absolute secret paths and their file names (kept: read on every call)."""
    absolute = tuple(p for p in protected.secret_paths if p.startswith("/"))
    return absolute, frozenset(posixpath.basename(p) for p in absolute)


def kills_gsv(argv: tuple[str, ...], pids: frozenset[int]) -> bool:
    """`kill PID` of a gsv process, `kill -1`/`0` (every process), `pkill -f gsv`."""
    if os.path.basename(argv[0]) not in KILLERS:
        return False
    targets = [w for w in argv[1:] if not w.startswith("-") or w == "-1"]
    mine = {str(pid) for pid in pids}
    return any(t in mine or t in ("-1", "0") or "gsv" in t.lower() for t in targets)


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _dirs(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]
