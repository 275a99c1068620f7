"""Rules the owner grows from the prompt: "always allow `git commit`".

A rule is a program and, usually, its subcommand or script: `git commit`, `npm test`,
`python3 job.py`, `./build.sh`. It allows a command whose first words are exactly the
rule's words, whatever follows (`git commit -m "..."`). A rule naming only an
interpreter or a shell (`python3`) never allows inline code or code read from stdin
(`python3 -c`, `python3 -B -c`, `echo ... | python3`): it needs a script file next to it.
Rules never reach commands run through `sudo`/`doas`.

Some programs are dangerous through their options or a script given as a word (`find .
-exec`, `tar --checkpoint-action=exec=...`, `sed -e '1e ...'`, `make -f /dev/stdin`, `git
clone --config`): no rule is offered for find, tar, sed, awk or the wrappers, and a rule,
offered or set by hand, never covers the options that run programs (`covers`).

They live in `toolApproval.allow` (shown by `gsv approvals rules`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from gsv_core.approval.allowlist import GIT_READS
from gsv_core.approval.allowlist import GIT_REFUSED
from gsv_core.approval.allowlist import INTERPRETERS
from gsv_core.approval.allowlist import SHELLS
from gsv_core.approval.allowlist import TABLE
from gsv_core.approval.allowlist import git_read_options
from gsv_core.approval.allowlist import git_subcommand
from gsv_core.approval.allowlist import program_name
from gsv_core.approval.allowlist import refused_option
from gsv_core.approval.shell import PATTERN_CHARS
from gsv_core.approval.wrappers import WRAPPERS
from gsv_core.config import MAX_RULE_WORDS
from gsv_core.config import RULE_WORD

# a blanket rule for these would let options in that change everything (`git -c ...`);
# wrappers (`env`, `sudo`, `xargs`) and `find` get no rule at all (NO_RULE)
NO_BLANKET = frozenset({"git"})
SCRIPT_FIRST = frozenset({"sed", "awk", "gawk", "mawk", "nawk"})  # the first operand is code
# no rule is offered for these: their next word is a path (`find .`), a bundle of
# options (`tar czf`), code (`sed s/a/b/`) or a program to run (`xargs rm`, `env X=1 sh`)
NO_RULE = frozenset({"find", "tar", *SCRIPT_FIRST}) | WRAPPERS
# a rule for these covers only operands after its words: no option, no `NAME=value`
# (`make test -f /dev/stdin`, `make test SHELL=...`), no pattern that could expand to one
OPERANDS_ONLY = frozenset({"make", "gmake", "find", "tar", *SCRIPT_FIRST})
# what makes a word expand to other words (a pattern, or `{-f,x}` brace expansion)
GLOB_CHARS = PATTERN_CHARS | {"{"}
# git subcommands that run programs or change what git runs: allow once only
GIT_NO_RULE = frozenset({"config", "submodule", "bisect", "difftool", "mergetool", "hook",
    "filter-branch", "send-email", "daemon", "instaweb", "credential", "web--browse"})  # fmt: skip
# options of git subcommands that run a program, or give a new repository config or hooks
GIT_RUNS: dict[str, tuple[str, ...]] = {
    "clone": ("-u", "--upload-pack", "-c", "--config", "--template"),
    "init": ("--template",),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "push": ("--receive-pack", "--exec"),
    "archive": ("--exec",),
    "rebase": ("-x", "--exec"),
    "grep": ("-O", "--open-files-in-pager"),
}


def parse_rule(text: str) -> tuple[str, ...]:
    """The words of a rule, or ValueError saying what is wrong with it."""
    words = tuple(text.split())
    if not words or len(words) > MAX_RULE_WORDS:
        raise ValueError(f"a rule is a program and up to {MAX_RULE_WORDS - 1} words: {text!r}")
    bad = [w for w in words if not RULE_WORD.fullmatch(w)]
    if bad:
        raise ValueError(f"rule word {bad[0]!r} has characters the shell would interpret")
    return words


def runs_code(program: str) -> bool:
    name = program_name(program) or program.rsplit("/", 1)[-1]
    return name in SHELLS or name in INTERPRETERS or name.startswith("python")


def covers(rule: tuple[str, ...], argv: tuple[str, ...]) -> bool:
    """Whether `rule` allows the command `argv` (already unwrapped): its first words are
    the rule's, and what follows runs no program the rule does not name."""
    if argv[: len(rule)] != rule:
        return False
    name, rest = program_name(rule[0]) or rule[0], argv[len(rule) :]
    if name in WRAPPERS:  # a rule for `env` is not a rule for what env runs
        return not rest
    if name in SCRIPT_FIRST and len(rule) == 1:  # the next word would be code
        return False
    if len(rule) == 1 and runs_code(rule[0]):
        return len(argv) > 1 and not argv[1].startswith("-")
    if name in OPERANDS_ONLY:
        return not any(w.startswith("-") or "=" in w or GLOB_CHARS & set(w) for w in rest)
    return _refused(name, argv[1:]) is None


def _refused(name: str, args: tuple[str, ...]) -> str | None:
    """Why the options in `args` may not ride on a rule: the read-only table's refused
    options of the program (`sort -o`, `git diff --ext-diff`) and git's options that run
    programs (`git clone -u`, `git rebase -x`); a pattern could expand to any of them."""
    spec = TABLE.get(name)
    check: Callable[[tuple[str, ...]], str | None] | None
    if name == "git":  # git's own options (`-c core.pager=...`) come before the subcommand
        parsed = git_subcommand(args)
        if isinstance(parsed, str):
            return parsed
        sub, args = parsed
        refused = GIT_REFUSED if sub in GIT_READS else GIT_RUNS.get(sub, ())
        check = functools.partial(git_read_options, sub) if sub in GIT_READS else None
    else:
        refused = spec.refused if spec is not None else ()
        check = spec.check if spec is not None else None
    if not refused and check is None:
        return None
    if any(GLOB_CHARS & set(word) for word in args):
        return f"a pattern could turn into an option of {name}"
    return check(args) if check is not None else refused_option(args, refused, name)


def rule_for(argv: tuple[str, ...]) -> str | None:
    """The rule the prompt offers for a command: the program with its subcommand or
    script (`git commit`, `python3 job.py`), or None when no rule would be safe to offer."""
    if not argv:
        return None
    name = program_name(argv[0]) or ""
    second = argv[1] if len(argv) > 1 else None
    if name in NO_RULE or (name == "git" and second in GIT_NO_RULE):
        return None
    if second is not None and not second.startswith("-"):
        words: tuple[str, ...] = (argv[0], second)
    elif runs_code(argv[0]) or name in NO_BLANKET:
        return None
    else:
        words = (argv[0],)
    if not all(RULE_WORD.fullmatch(w) for w in words):
        return None
    return " ".join(words)


def load_rules(raw: object) -> tuple[tuple[str, ...], ...]:
    """`toolApproval.allow` as word tuples; entries that do not parse are skipped (the
    config schema refuses them when they are set)."""
    rules = []
    for item in raw if isinstance(raw, list) else []:
        try:
            rules.append(parse_rule(str(item)))
        except ValueError:
            continue
    return tuple(rules)


def add_rules(current: object, new: tuple[str, ...]) -> list[str]:
    """`toolApproval.allow` with `new` appended (each rule once)."""
    existing = [str(r) for r in current] if isinstance(current, list) else []
    return list(dict.fromkeys([*existing, *new]))
