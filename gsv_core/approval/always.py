"""Rules the owner grows from the prompt: "always allow `git commit`".

A rule is a program and, usually, its subcommand or script: `git commit`, `npm test`,
`python3 job.py`, `./build.sh`. It allows a command whose first words are exactly the
rule's words, whatever follows (`git commit -m "..."`). A rule naming only an
interpreter or a shell (`python3`) never allows inline code or code read from stdin
(`python3 -c`, `python3 -B -c`, `echo ... | python3`): it needs a script file next to it.
Rules never reach commands run through `sudo`/`doas`.

They live in `toolApproval.allow` (shown by `gsv approvals rules`).
"""

from __future__ import annotations

from gsv_core.approval.allowlist import INTERPRETERS, SHELLS, program_name
from gsv_core.config import MAX_RULE_WORDS, RULE_WORD

# a blanket rule for these would let options in that change everything (`git -c ...`)
NO_BLANKET = frozenset({"git", "env", "sudo", "doas", "xargs", "find"})


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
    """Whether `rule` allows the command `argv` (already unwrapped)."""
    if argv[: len(rule)] != rule:
        return False
    if len(rule) == 1 and runs_code(rule[0]):
        return len(argv) > 1 and not argv[1].startswith("-")
    return True


def rule_for(argv: tuple[str, ...]) -> str | None:
    """The rule the prompt offers for a command: the program with its subcommand or
    script (`git commit`, `python3 job.py`), or None when no rule would be safe to offer."""
    if not argv:
        return None
    second = argv[1] if len(argv) > 1 else None
    if second is not None and not second.startswith("-"):
        words: tuple[str, ...] = (argv[0], second)
    elif runs_code(argv[0]) or (program_name(argv[0]) or "") in NO_BLANKET:
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
