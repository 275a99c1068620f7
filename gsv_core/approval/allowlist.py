"""The allowlist: the programs that run without asking, and how each must be called to
stay read-only (explained in docs/approvals.md).

A simple command passes when its program is in `TABLE` and none of its words turns it
into a writer or a launcher (`sort -o`, `find -exec`, `rg --pre`, `git -c`). Everything
else asks: interpreters and shells whatever their options, scripts, programs that write,
delete, talk to the network or run other programs (wrappers are unwrapped first, see
`wrappers.py`). `X --version` and `X --help` pass for any program found on PATH.

Long options are refused by prefix as well (`sort --out=x` is GNU getopt's abbreviation
of `--output`), and short ones inside clusters (`sort -uo x`); both err towards asking.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from gsv_core.approval.shell import SimpleCommand

SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin",
                         "/opt/homebrew/bin"})  # fmt: skip


@dataclass(frozen=True)
class ReadOnly:
    """How a read-only program stays read-only."""

    refused: tuple[str, ...] = ()  # options that write, delete or run something
    max_operands: int | None = None  # `uniq in out` writes `out`
    blind: bool = False  # safe with arguments nobody saw (`xargs`): prints no file content
    check: Callable[[tuple[str, ...]], str | None] | None = None  # a custom reading
    # a pattern may spell a refused option (`wc *` with a file named `--files0-from=x`):
    # tolerated where those options reveal only sizes, counts or checksum matches
    patterns: bool = False


def _find(args: tuple[str, ...]) -> str | None:
    for word in args:
        if word.startswith(("-exec", "-ok", "-delete", "-fprint", "-fls")):
            return f"find {word} runs a program, deletes or writes files"
    return None


def _date(args: tuple[str, ...]) -> str | None:
    """`date +%F` prints; `date 0101000020` (and `-s`) set the clock."""
    setting = [a for a in _operands(args) if not a.startswith("+")]
    if setting or refused_option(args, ("-s", "--set"), "date"):
        return "date with a time to set changes the system clock"
    return None


# (not -p/--paginate: it starts a pager even without a terminal)
GIT_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-optional-locks",
    "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
    "--no-replace-objects"})  # fmt: skip
GIT_READS = frozenset({"status", "diff", "log", "show", "rev-parse", "ls-files", "blame",
                       "shortlog", "describe", "branch"})  # fmt: skip
GIT_REFUSED = ("--output", "--ext-diff", "--textconv")
# checking a signature runs `gpg.program`, which a repository's own config may point
# anywhere: `git log --show-signature`, a format with `%G?`, `%GS`, `%+GK` ..., and a
# branch listing with `%(signature)` (git 2.44 and later)
GIT_SIGNATURES = ("--show-signature",)
GIT_SIGNATURE_FORMAT = re.compile(r"%[-+ ]?G|%\(signature")
GIT_BRANCH_LISTING = frozenset({"--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv",
    "--verbose", "--show-current", "--merged", "--no-merged", "--contains", "--no-contains",
    "--points-at", "--sort", "--format", "--color", "--no-color", "--column", "--no-column",
    "-i", "--ignore-case", "--abbrev", "--no-abbrev", "--omit-empty"})  # fmt: skip


def git_subcommand(args: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | str:
    """git's subcommand and its arguments, past the global options that change nothing
    git runs (`-C dir`, `--no-pager`, ...); or why not: `-c`, `--config-env`,
    `--exec-path`, `--git-dir` and friends can make git run programs."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] == "-C":
            index += 2
        elif args[index] in GIT_GLOBAL_FLAGS:
            index += 1
        else:
            return f"git {args[index]} can change what git runs"
    if index >= len(args):
        return "git without a subcommand"
    return args[index], args[index + 1 :]


def _git(args: tuple[str, ...]) -> str | None:
    """`git [-C dir] [--no-pager] status|diff|log|show|branch --list|rev-parse ...`."""
    parsed = git_subcommand(args)
    if isinstance(parsed, str):
        return parsed
    sub, rest = parsed
    if sub not in GIT_READS:
        return f"git {sub} is not a read-only git command"
    problem = _git_branch(rest) if sub == "branch" else None
    return problem or git_read_options(sub, rest)


def git_read_options(sub: str, args: tuple[str, ...]) -> str | None:
    """Why the options of a read-only git subcommand make it write or run a program:
    GIT_REFUSED, and checking signatures (GIT_SIGNATURES, GIT_SIGNATURE_FORMAT)."""
    problem = refused_option(args, GIT_REFUSED, f"git {sub}")
    options = args[: args.index("--")] if "--" in args else args
    signatures = refused_option(options, GIT_SIGNATURES, f"git {sub}") is not None
    if problem is None and (signatures or any(GIT_SIGNATURE_FORMAT.search(w) for w in options)):
        return f"git {sub} checking signatures runs gpg.program, which a repository may set"
    return problem


def _git_branch(rest: tuple[str, ...]) -> str | None:
    options = [w.split("=", 1)[0] for w in rest if w.startswith("-")]
    unknown = [o for o in options if o not in GIT_BRANCH_LISTING]
    if unknown:
        return f"git branch {unknown[0]} may change branches"
    listing = "--list" in options or "-l" in options
    if any(not w.startswith("-") for w in rest) and not listing:
        return "git branch NAME creates a branch"
    return None


def _strings(args: tuple[str, ...]) -> str | None:
    """binutils reads more arguments from `@FILE`, anywhere on the line (even after `--`):
    file names nobody sees on the line."""
    if any(word.startswith("@") for word in args):
        return "strings @FILE reads more arguments (file names) from a file"
    return None


# ps (procps on Linux, BSD and macOS) prints each process's environment -- a gateway's
# provider keys -- with `e` among BSD options (`ps eww -p PID`, `ps axe`), `-E` (macOS,
# BSD) or `--env`. UNIX options are read letter by letter: `-e` (every process) is not
# `e`, unless procps finds a UNIX option it does not know (`-x`, `-ex`, `-e -ax`) or an
# attached argument it cannot read: then it reads the whole line again as BSD options,
# and `-e` shows the environment (tried for real with procps-ng 4.0.2).
PS_UNIX_FLAGS = frozenset("AacdeFfHjLlMmNPTwyZ")
PS_UNIX_ARGUMENT = frozenset("CGgnOopqstUu")  # the rest of the word, or the next word
PS_BSD_ARGUMENT = frozenset("kNOopqtU")
PS_GNU_ARGUMENT = frozenset({"--cols", "--columns", "--width", "--rows", "--lines", "--format",
    "--sort", "--pid", "--ppid", "--quick-pid", "--sid", "--tty", "--user", "--User", "--group",
    "--Group", "--help"})  # fmt: skip
PS_ENVIRONMENT = "ps with e (BSD), -E or --env prints each process's environment"


def _ps(args: tuple[str, ...]) -> str | None:
    """None unless a word may make ps print the environment (PS_ENVIRONMENT)."""
    rereads = dashed_e = False  # procps may read the line again as BSD options
    index = 0
    while index < len(args):
        word, index = args[index], index + 1
        if word.startswith("--"):
            name = re.split("[=:]", word, maxsplit=1)[0]
            if name.startswith("--e"):  # (procps has no other long option on `--e`)
                return PS_ENVIRONMENT
            if name in PS_GNU_ARGUMENT and name == word:
                index += 1
            continue
        if word.lstrip("+-")[:1].isdigit() or word == "-":  # process ids, or an error
            continue
        dashed = word.startswith("-")
        letters, takes_next, odd = _ps_cluster(word[1:] if dashed else word, dashed)
        if ("E" if dashed else "e") in letters:
            return PS_ENVIRONMENT
        following = args[index] if takes_next and index < len(args) else ""
        if dashed:
            rereads = rereads or odd or following.startswith("-")
            dashed_e = dashed_e or "e" in word
        index += takes_next
    return PS_ENVIRONMENT if rereads and dashed_e else None


def _ps_cluster(cluster: str, unix: bool) -> tuple[str, bool, bool]:
    """The option letters of one ps word up to one that takes an argument; whether that
    argument is the next word; and, for UNIX options, whether procps may fail to read the
    word as such (a letter it does not know, an attached argument other than a format or
    process ids)."""
    argument = PS_UNIX_ARGUMENT if unix else PS_BSD_ARGUMENT
    position = next((i for i, c in enumerate(cluster) if c in argument), len(cluster))
    letters, attached = cluster[: position + 1], cluster[position + 1 :]
    takes = position < len(cluster)
    plain = attached.replace(",", "").isdigit() or letters[-1:] in ("o", "O")
    odd = unix and (not set(cluster[:position]) <= PS_UNIX_FLAGS or (bool(attached) and not plain))
    return letters, takes and not attached, odd


_PLAIN = ReadOnly()
_BLIND = ReadOnly(blind=True)
# options that read the names of the files to read from another file: the line would
# not show the secret file it reads (`sort --files0-from=names.lst`)
_SUMS = ReadOnly(refused=("-c", "--check"), patterns=True)
_COUNTS = ReadOnly(refused=("--files0-from",), blind=True, patterns=True)  # wc, du


def _names(text: str) -> list[str]:
    return text.split()


# program -> how it stays read-only
TABLE: dict[str, ReadOnly] = {
    # files and their contents
    **dict.fromkeys(
        _names("""
            cat head tail nl tac rev cut tr fold fmt paste join comm column expand unexpand
            od hexdump base64 grep egrep fgrep diff cmp jq
        """),
        _PLAIN,
    ),
    **dict.fromkeys(
        _names("md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum"), _SUMS
    ),
    "strings": ReadOnly(check=_strings),
    # names, sizes and the system: nothing of a file's contents
    **dict.fromkeys(
        _names("""
            ls stat df realpath readlink basename dirname pwd echo true false
            test [ whoami id groups uname which type nproc uptime free pgrep lscpu lsblk
            locale seq sleep cd pushd popd dirs
        """),
        _BLIND,
    ),
    "wc": _COUNTS,
    "du": _COUNTS,
    "uniq": ReadOnly(max_operands=1),
    "xxd": ReadOnly(max_operands=1, refused=("-r", "--revert")),
    "sort": ReadOnly(refused=("-o", "--output", "--compress-program", "--files0-from")),
    "rg": ReadOnly(refused=("--pre", "--hostname-bin")),
    "tree": ReadOnly(refused=("-o", "--output", "-R")),  # -R writes 00Tree.html files
    "file": ReadOnly(refused=("-C", "--compile", "-f", "--files-from"), blind=True),
    "date": ReadOnly(check=_date),
    # the bash builtin's -v sets a variable (PATH, say) for the commands after it
    "printf": ReadOnly(refused=("-v",), blind=True),
    "hostname": ReadOnly(refused=("-F", "--file", "-b", "--boot"), max_operands=0),
    "find": ReadOnly(check=_find),
    "ps": ReadOnly(check=_ps),  # not blind: `xargs ps` may be given `e`
    "git": ReadOnly(check=_git),
}
SHELLS = frozenset(_names("sh bash zsh dash ksh mksh fish ash csh tcsh busybox"))
INTERPRETERS = frozenset(
    _names("""
        python python2 python3 pypy pypy3 node nodejs deno bun perl ruby php lua luajit
        awk gawk mawk nawk sed tclsh wish Rscript osascript pwsh powershell guile expect
    """)
)
SHELL_STATE = frozenset(_names("eval source . alias unalias export set shopt trap"))
# builtins that may take `--help` or `--version` for a file to run or a command to find,
# not for the option every program prints text for: zsh's `source --help` runs ./--help
# (a file a Write in the workspace made), zsh's `noglob --help` runs a program of that
# name. Shells and interpreters read them as options (tested for real).
READS_ITS_OPERAND = SHELL_STATE | frozenset(
    _names("exec command builtin fc noglob nocorrect autoload emulate sched coproc")
)


def _reason(program: str) -> str:
    if program in SHELLS:
        return f"{program} is a shell: it runs whatever it reads"
    if program in INTERPRETERS or program.startswith("python"):
        return f"{program} is an interpreter: it runs code gsv cannot inspect"
    if program in SHELL_STATE:
        return f"{program} changes how the shell reads what follows"
    return f"{program} is not on the read-only allowlist"


def judge(command: SimpleCommand, argv: tuple[str, ...], blind: bool = False) -> str | None:
    """None when `argv` (the command after unwrapping) is a known read-only use, else why
    it must ask. `blind`: more arguments arrive that nobody saw (xargs)."""
    program = program_name(argv[0])
    if program is None:
        return f"{argv[0]} is a script or a program outside the system directories"
    asks_for_text = len(argv) == 2 and argv[1] in ("--version", "--help")
    if asks_for_text and not blind and program not in READS_ITS_OPERAND:
        return None
    spec = TABLE.get(program)
    if spec is None:
        return _reason(program)
    if blind and not spec.blind:
        return f"{program} would read files named by input nobody has seen"
    args = argv[1:]
    if (spec.refused or spec.check) and not spec.patterns and _globbed(command, argv):
        return f"a pattern or {{a,b}} could turn into an option of {program}"
    problem = spec.check(args) if spec.check else refused_option(args, spec.refused, program)
    too_many = spec.max_operands is not None and len(_operands(args)) > spec.max_operands
    if problem is None and too_many:
        return f"{program} with more than {spec.max_operands} file(s) may write the last"
    return problem


def program_name(word: str) -> str | None:
    """The program a command word names, if it comes from the system (`/usr/bin/ls`
    is `ls`; `./job.sh` is a script)."""
    if "/" not in word:
        return word
    directory, name = os.path.split(word)
    return name if directory in SYSTEM_DIRS else None


def refused_option(args: tuple[str, ...], refused: tuple[str, ...], program: str) -> str | None:
    for word in args:
        if word == "--":
            return None
        if _is_refused(word, refused):
            return f"{program} {word} writes files, runs a program or reads unnamed files"
    return None


def _is_refused(word: str, refused: tuple[str, ...]) -> bool:
    if word.startswith("--") and len(word) > 2:
        name = word.split("=", 1)[0]
        return any(r.startswith("--") and r.startswith(name) for r in refused)
    if word.startswith("-") and len(word) > 1:
        return any(len(r) == 2 and r[1] in word[1:] for r in refused)
    return False


def _operands(args: tuple[str, ...]) -> list[str]:
    if "--" in args:
        cut = args.index("--")
        return [a for a in args[:cut] if not a.startswith("-")] + list(args[cut + 1 :])
    return [a for a in args if not a.startswith("-") or a == "-"]


def _globbed(command: SimpleCommand, argv: tuple[str, ...]) -> bool:
    """An unquoted pattern or brace expansion among the arguments of a program with
    options that write or run: `sort *` with a file called `-o x`, `find . {-delete,}`."""
    globbed = {w.text for w in command.words if w.glob}
    return any(word in globbed for word in argv[1:])
