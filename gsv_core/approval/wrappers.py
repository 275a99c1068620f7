"""Programs that run another program: `sudo`, `doas`, `pkexec`, `run0`, `env`, `nice`,
`timeout`, `xargs`, `nohup`, `setsid`, `flock`, `stdbuf`, `ionice`, `taskset`, `time`,
`command`, `builtin`, `exec`.

`unwrap()` reads a wrapper's own options and returns the command it runs, so the
approval policy judges that command (`setsid rm x` is an `rm`). It reads options
strictly: an option it does not know, or one that makes the wrapper do something else
(`env -S` splits a string into a new command line, `sudo -s` starts a shell, `ionice -p`
changes another process, `time -o` writes a file) is reported, and the caller asks a
human. Every wrapper and option is documented in docs/approvals.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gsv_core.approval.allowlist import program_name
from gsv_core.approval.shell import ASSIGNMENT


@dataclass(frozen=True)
class Unwrapped:
    """What a wrapper runs. `argv` empty: it runs nothing (`command -v ls`, bare `nohup`)."""

    argv: tuple[str, ...] = ()
    problem: str | None = None  # why the wrapper itself cannot be vouched for
    privileged: bool = False  # sudo, doas, pkexec, run0: always asks (lines.py)
    unseen_args: bool = False  # xargs: more arguments arrive on stdin
    assignments: tuple[str, ...] = ()  # env NAME=value
    writes: tuple[str, ...] = ()  # flock's lock file, created if missing


@dataclass(frozen=True)
class _Options:
    flags: frozenset[str] = frozenset()  # options without a value
    valued: frozenset[str] = frozenset()  # options followed by a value (`-u root`)
    refused: frozenset[str] = frozenset()  # options that change what the wrapper does
    numeric_flags: bool = False  # `nice -10`


def _opts(flags: str = "", valued: str = "", refused: str = "", numeric: bool = False) -> _Options:
    return _Options(frozenset(flags.split()), frozenset(valued.split()),
                    frozenset(refused.split()), numeric)  # fmt: skip


SUDO = _opts(
    "-n -H -E -P -S -A -b -k --non-interactive --preserve-env --set-home --stdin --askpass "
    "--background --reset-timestamp",
    "-u -g -C -p -r -t -U -D -R -T -h --user --group --close-from --prompt --role --type "
    "--other-user --chdir --chroot --command-timeout --host",
    "-s -i -e -v -l -K -V --shell --login --edit --validate --list --remove-timestamp",
)
ENV = _opts(
    "-i -0 -v --ignore-environment --null --debug",
    "-u -C --unset --chdir",
    "-S --split-string --default-signal --ignore-signal --block-signal --list-signal-handling",
)
NICE = _opts("", "-n --adjustment", numeric=True)
TIMEOUT = _opts("-v --verbose --preserve-status --foreground", "-s -k --signal --kill-after")
XARGS = _opts(
    "-0 -r -t -x --null --no-run-if-empty --verbose --exit",
    "-n -P -I -L -d -E -s --max-args --max-procs --replace --max-lines --delimiter --eof "
    "--max-chars",
    "-a -p -o -i -e -l --arg-file --interactive --open-tty --process-slot-var",
)
SETSID = _opts("-c -f -w --ctty --fork --wait")
FLOCK = _opts(
    "-s -x -u -n -o -F -e --shared --exclusive --unlock --nonblock --nb --close --no-fork "
    "--verbose",
    "-w -E --timeout --wait --conflict-exit-code",
    "-c --command",
)
STDBUF = _opts("", "-i -o -e --input --output --error")
IONICE = _opts("-t --ignore", "-c -n --class --classdata", "-p -P -u --pid --pgid --uid")
TASKSET = _opts("-c -a --cpu-list --all-tasks", "", "-p --pid")
TIME = _opts("-p -v -q --portability --verbose --quiet", "-f --format", "-o -a --output --append")
PKEXEC = _opts("--disable-internal-agent --keep-cwd", "--user")
RUN0 = _opts("--no-ask-password", "-u -g -D --user --group --chdir")
COMMAND = _opts("-p", "", "-v -V")
EXEC = _opts("-c -l", "-a")
NOTHING = _opts()


def unwrap(argv: tuple[str, ...]) -> Unwrapped | None:
    """The command `argv` runs if its program is a wrapper, else None. Only the system's
    wrappers count: `./nice ls` or `/tmp/x/env ls` is a program of its own."""
    name = program_name(argv[0]) if argv else None
    if name is None or argv[1:] in (("--version",), ("--help",)):
        return None  # a script, or the wrapper describing itself
    reader = _READERS.get(name)
    return None if reader is None else reader(list(argv[1:]))


def _read(
    words: list[str], spec: _Options, assignments: bool = False
) -> tuple[list[str], list[str], str | None, list[str]]:
    """Split a wrapper's words: (options seen, assignments, problem, the rest)."""
    seen: list[str] = []
    assigned: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return seen, assigned, None, words[index + 1 :]
        if assignments and ASSIGNMENT.match(word):
            assigned.append(word)
            index += 1
            continue
        if not word.startswith("-") or word == "-":
            return seen, assigned, None, words[index:]
        name = word.split("=", 1)[0]
        clustered = not _attached(word, spec) and _short_in(word, spec.refused)
        if name in spec.refused or clustered:
            return seen, assigned, f"{word} changes what the wrapper does", []
        seen.append(name)
        if name in spec.valued and "=" not in word:
            index += 2
        elif _known(word, name, spec):
            index += 1
        else:
            return seen, assigned, f"{word}: an option gsv does not know", []
    return seen, assigned, None, []


def _known(word: str, name: str, spec: _Options) -> bool:
    numeric = spec.numeric_flags and word[1:].isdigit()
    return name in spec.flags or name in spec.valued or _attached(word, spec) or numeric


def _short_in(word: str, refused: frozenset[str]) -> bool:
    """`-si` holds the refused `-s` and `-i` (short options in one word)."""
    if word.startswith("--") or len(word) < 3:
        return False
    return any(f"-{letter}" in refused for letter in word[1:])


def _attached(word: str, spec: _Options) -> bool:
    """`-n5`, `-uroot`: a short option with its value attached."""
    return not word.startswith("--") and len(word) > 2 and word[:2] in spec.valued


def _simple(spec: _Options, privileged: bool = False) -> Callable[[list[str]], Unwrapped]:
    def reader(words: list[str]) -> Unwrapped:
        _, _, problem, rest = _read(words, spec)
        return Unwrapped(tuple(rest), problem, privileged)

    return reader


def _env(words: list[str]) -> Unwrapped:
    _, assigned, problem, rest = _read(words, ENV, assignments=True)
    return Unwrapped(tuple(rest), problem, assignments=tuple(assigned))


def _timeout(words: list[str]) -> Unwrapped:
    _, _, problem, rest = _read(words, TIMEOUT)
    return Unwrapped(tuple(rest[1:]), problem)  # rest[0] is the duration


def _xargs(words: list[str]) -> Unwrapped:
    _, _, problem, rest = _read(words, XARGS)
    return Unwrapped(tuple(rest) or ("echo",), problem, unseen_args=True)


def _flock(words: list[str]) -> Unwrapped:
    _, _, problem, rest = _read(words, FLOCK)
    if not rest:
        return Unwrapped((), problem)
    lock = rest[0]
    writes = () if lock.isdigit() else (lock,)
    return Unwrapped(tuple(rest[1:]), problem, writes=writes)


def _taskset(words: list[str]) -> Unwrapped:
    _, _, problem, rest = _read(words, TASKSET)
    return Unwrapped(tuple(rest[1:]), problem)  # rest[0] is the mask or cpu list


def _command(words: list[str]) -> Unwrapped:
    if words and words[0] in ("-v", "-V"):  # describes a command, runs nothing
        return Unwrapped(())
    return _simple(COMMAND)(words)


_READERS: dict[str, Callable[[list[str]], Unwrapped]] = {
    "sudo": _simple(SUDO, privileged=True),
    "doas": _simple(SUDO, privileged=True),
    "pkexec": _simple(PKEXEC, privileged=True),
    "run0": _simple(RUN0, privileged=True),
    "env": _env,
    "nice": _simple(NICE),
    "timeout": _timeout,
    "xargs": _xargs,
    "nohup": _simple(NOTHING),
    "setsid": _simple(SETSID),
    "flock": _flock,
    "stdbuf": _simple(STDBUF),
    "ionice": _simple(IONICE),
    "taskset": _taskset,
    "time": _simple(TIME),
    "command": _command,
    "builtin": _simple(NOTHING),
    "exec": _simple(EXEC),
}
WRAPPERS = frozenset(_READERS)
