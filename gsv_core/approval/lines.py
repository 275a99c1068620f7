"""Judging one shell line (Bash, Process write/submit) under the approval mode.

Every mode first refuses what touches gsv itself (`protected.py`), command by command,
wrappers unwrapped. Then:

* `allowlist`: each simple command must be on the read-only table (`allowlist.py`) or
  allowed by one of the owner's rules (`always.py`, or a configured rule); anything
  else -- and any line not read with confidence, any redirection into a file, any word
  bash would expand -- asks. The most cautious outcome over all commands wins. On a
  sandboxed node (`toolApproval.sandboxed: auto`, the sandbox's latitude) a command that
  would ask only because it writes in the workspace or runs a local program runs
  unasked, confined; what the sandbox does not contain still asks (`_contained`).
* `denylist`: the older behaviour: configured rules, then the standard preset of
  dangerous programs, then `defaultDecision`; a line not read with confidence asks.
* `off`: only configured rules; nothing else asks.

Lines longer than `toolApproval.maxCommandBytes` ask before anything is read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import replace

from gsv_core.approval import allowlist
from gsv_core.approval import always
from gsv_core.approval.dangerous import still_asks
from gsv_core.approval.decision import ALLOW
from gsv_core.approval.decision import ASK
from gsv_core.approval.decision import DENY
from gsv_core.approval.decision import Decision
from gsv_core.approval.decision import combined
from gsv_core.approval.decision import most_cautious
from gsv_core.approval.protected import KILLS
from gsv_core.approval.protected import NAMES_ONLY
from gsv_core.approval.protected import RECURSIVE_SEARCHERS
from gsv_core.approval.protected import SECRETS
from gsv_core.approval.protected import SecretCheck
from gsv_core.approval.protected import kills_gsv
from gsv_core.approval.shell import ASSIGNMENT
from gsv_core.approval.shell import PATTERN_CHARS
from gsv_core.approval.shell import ShellParse
from gsv_core.approval.shell import SimpleCommand
from gsv_core.approval.shell import Word
from gsv_core.approval.shell import expand_braces
from gsv_core.approval.shell import is_pattern
from gsv_core.approval.shell import parse_script
from gsv_core.approval.shell import words_of
from gsv_core.approval.wrappers import unwrap

ALLOWLIST, DENYLIST, OFF = "allowlist", "denylist", "off"
MODES = (ALLOWLIST, DENYLIST, OFF)
DEFAULT_MAX_BYTES = 65_536
# assignments that only change language, time zone or layout
SAFE_ASSIGNMENT = re.compile(r"(LC_[A-Z]+|LANG|LANGUAGE|TZ|NO_COLOR|COLUMNS|LINES|TERM)\+?=")
HARMLESS_WRITES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
NETWORK_FILES = ("/dev/tcp/", "/dev/udp/")  # bash opens a connection for these
UNSURE = frozenset({"eval", "source", ".", "exec", "alias"})
MAX_UNWRAP = 8
_RUN = re.compile(r"[^\s'\"`;&|()<>{},=:]+")  # a path-like run of a line's characters


@dataclass
class LineContext:
    mode: str
    default: str
    allow_rules: tuple[tuple[str, ...], ...]
    # the configured rules (and in denylist mode the preset) for one command
    rule: Callable[[SimpleCommand], Decision | None]
    secrets: SecretCheck
    pids: frozenset[int]
    max_bytes: int = DEFAULT_MAX_BYTES
    # the sandbox's latitude: set when the call would run in the node's sandbox and
    # `toolApproval.sandboxed` is auto; says whether a redirection's target stays inside
    # the workspace (docs/sandbox.md)
    contained_write: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class Layer:
    """One program of a command, outermost first: `sudo -u x nice rm a` has three."""

    argv: tuple[str, ...]
    privileged: bool = False
    blind: bool = False
    writes: tuple[str, ...] = ()
    assignments: tuple[str, ...] = ()
    problem: str | None = None


def judge_line(script: str, ctx: LineContext) -> Decision:
    size = len(script.encode("utf-8", "surrogatepass"))
    if size > ctx.max_bytes:
        reason = f"too long to read ({size} bytes; toolApproval.maxCommandBytes is {ctx.max_bytes})"
        # the whole line: each prompt shows its start and its end (approval/service.py),
        # a cut here would hide how it ends
        return Decision(ASK, reason, None, script)
    parsed = parse_script(script)
    stacked = _stacked(parsed)
    denied = _protection(stacked, ctx)
    if denied is None and not parsed.confident and _names_a_secret(script, ctx.secrets):
        denied = SECRETS
    if denied is not None:
        return Decision(DENY, denied, "gsv-protected", script)
    if ctx.mode == DENYLIST:
        outcome = _denylist(parsed, stacked, ctx)
    elif ctx.mode == OFF:
        outcome = _off(stacked, ctx)
    else:
        outcome = _allowlist(parsed, stacked, ctx)
    return replace(outcome, summary=script)


def layers(command: SimpleCommand) -> Iterator[Layer]:
    """The command and every command its wrappers run, outermost first."""
    argv, privileged, blind = command.argv, False, False
    for _ in range(MAX_UNWRAP):
        inner = unwrap(argv)
        if inner is None:
            yield Layer(argv, privileged, blind)
            return
        yield Layer(argv, privileged, blind, inner.writes, inner.assignments, inner.problem)
        if inner.problem is not None:
            return
        if not inner.argv:  # `command -v git`, a bare `nohup`: runs nothing more
            yield Layer((), privileged or inner.privileged, blind)
            return
        argv, privileged = inner.argv, privileged or inner.privileged
        blind = blind or inner.unseen_args
    yield Layer(argv, privileged, blind, problem="too many wrappers")


# a command and its layers, unwrapped once per line: every check of every mode reads them
Stacked = list[tuple[SimpleCommand, list[Layer]]]


def _stacked(parsed: ShellParse) -> Stacked:
    return [(command, list(layers(command))) for command in parsed.commands]


# -- protections (every mode) ---------------------------------------------------------
def _protection(stacked: Stacked, ctx: LineContext) -> str | None:
    check = ctx.secrets
    for written, stack in stacked:
        command = expand_braces(written)  # `{secrets,x}.toml` is two files
        if command is not written:  # other words: unwrapped as they are
            stack = list(layers(command))
        if any(layer.argv and kills_gsv(layer.argv, ctx.pids) for layer in stack):
            return KILLS
        if command.joined != "&&":
            check.chain_ends()
        if _touches(command, stack[-1].argv, check):
            return SECRETS
        _follow_cd(command, stack, check)
    return None


def _names_a_secret(script: str, check: SecretCheck) -> bool:
    """A line read without confidence may hide commands from the reader (a heredoc body
    holding a quote, say): any run of characters in it naming a secret refuses it."""
    for run in _RUN.findall(script):
        pattern = is_pattern(run)
        folded = run.casefold()
        named = pattern or "proc" in run or any(name in folded for name in check.names)
        if named and check.touches(run, pattern):  # (only these can touch: kept fast)
            return True
    return False


def _follow_cd(command: SimpleCommand, stack: list[Layer], check: SecretCheck) -> None:
    """Tell the secret check where a `cd`, `pushd` or `popd` goes: also `builtin cd`,
    `command cd` and `time cd`, which run the shell's own. Through any other wrapper
    (`env cd`, `nice cd`) a `cd` program runs that cannot move the shell; still, the
    directory is then unknown rather than guessed."""
    moves = [layer for layer in stack if layer.argv and _is_cd(layer.argv[0])]
    if not moves:
        return
    wrappers = [allowlist.program_name(layer.argv[0]) for layer in stack[:-1]]
    builtin = all(w in ("builtin", "command") or (w == "time" and i == 0)
                  for i, w in enumerate(wrappers))  # fmt: skip
    unsure = any(w.glob or w.dynamic for w in command.words) or not builtin
    check.change_dir(moves[-1].argv, unsure or moves[-1] is not stack[-1], command.shared)


def _is_cd(word: str) -> bool:
    return allowlist.program_name(word) in ("cd", "pushd", "popd")


def _touches(command: SimpleCommand, final: tuple[str, ...], check: SecretCheck) -> bool:
    """Whether the command names a secret; `final` is the program its wrappers run."""
    paths = [*command.writes, *command.reads]
    if any(check.touches(p) for p in paths):
        return True
    if any(check.touches(w.text, w.glob) for w in (*command.words, *command.assignments)):
        return True
    tilde = [p for w in command.words[1:] for p in _tilde_values(w.text)]
    if any(check.touches(p) for p in tilde):
        return True
    # `dd if=/proc/1/environ`, `--file=/x`: the path after the `=` is read as any other
    if any(check.touches(p, w.glob) for w in command.words[1:] for p in _values(w.text)):
        return True
    name = allowlist.program_name(final[0]) if final else None
    if name in NAMES_ONLY and (name != "find" or allowlist.judge(command, final) is None):
        return False
    if any(check.covers(_value(w.text), w.glob) for w in command.words[1:]):
        return True
    if any(check.covers(p) for p in tilde):
        return True
    return name in RECURSIVE_SEARCHERS and _implicit_cwd(final) and check.covers(".")


def _tilde_values(word: str) -> list[str]:
    """bash expands `~` after the `=` (and each `:`) of an argument shaped like an
    assignment: `dd if=~/.config/gsv/secrets.toml` reads the secret store."""
    if not ASSIGNMENT.match(word):
        return []
    return [p for p in word.split("=", 1)[1].split(":") if p.startswith("~")]


def _values(word: str) -> list[str]:
    """The paths after the `=` of an argument: each `:`-separated part of one shaped like
    an assignment (`if=/x`), the value of an option (`--file=/x`)."""
    if ASSIGNMENT.match(word):
        return word.split("=", 1)[1].split(":")
    return [word.split("=", 1)[1]] if word.startswith("-") and "=" in word else []


def _value(word: str) -> str:
    """`--file=~/x` names `~/x`."""
    return word.split("=", 1)[1] if word.startswith("-") and "=" in word else word


def _implicit_cwd(argv: tuple[str, ...]) -> bool:
    """A searcher given no path searches the working directory (`rg KEY`, `grep -r KEY`)."""
    return not any(w.startswith(("/", "~", ".")) or "/" in w for w in argv[1:])


# -- allowlist --------------------------------------------------------------------------
def _allowlist(parsed: ShellParse, stacked: Stacked, ctx: LineContext) -> Decision:
    found: Decision | None = None
    offers: list[str | None] = []
    for command, stack in stacked:
        judged, offer = _allowlist_command(command, stack, ctx)
        if judged.verdict != ALLOW:
            offers.append(offer)
        found = combined(found, judged)
    if not parsed.confident:
        reason = f"cannot read the command with confidence ({'; '.join(parsed.doubts)})"
        return most_cautious(Decision(_asking(ctx), reason), found or Decision(ALLOW))
    if found is None:
        return Decision(ALLOW)
    outcome = found
    if outcome.verdict == ASK and offers and None not in offers:
        unique = tuple(dict.fromkeys(o for o in offers if o))
        return Decision(outcome.verdict, outcome.reason, outcome.rule_id, always=unique)
    return outcome


def _asking(ctx: LineContext) -> str:
    return DENY if ctx.default == DENY else ASK


def _allowlist_command(
    command: SimpleCommand, stack: list[Layer], ctx: LineContext
) -> tuple[Decision, str | None]:
    """The decision for one simple command, and the rule the prompt may offer for it."""
    ask = _asking(ctx)
    configured = None if command.dynamic else _configured(stack, command, ctx)
    if configured is not None and configured.verdict != ALLOW:
        return configured, None
    # no rule lifts these: an allowed program still may not write through `>`
    problem = _unreadable(command, stack)
    if problem is not None:
        return _or_contained(Decision(ask, problem), command, stack, ctx), None
    last = stack[-1]
    if configured is not None:
        return configured, None
    if last.privileged:
        # the read-only table is about the owner's own files: as root, `cat` reads
        # /etc/shadow and `grep -r` every user's keys, so nothing runs unasked
        wrapper = next(stack[i - 1].argv[0] for i, layer in enumerate(stack) if layer.privileged)
        return Decision(ask, f"{wrapper} runs it as another user (root)"), None
    if not last.argv:
        return _runs_nothing(stack, ask), None
    if not last.privileged and any(always.covers(r, last.argv) for r in ctx.allow_rules):
        return Decision(ALLOW, "allowed by your rule", "allow", granted=True), None
    problem = allowlist.judge(command, last.argv, last.blind)
    if problem is None:
        return Decision(ALLOW), None
    offer = None if last.privileged or last.blind else always.rule_for(last.argv)
    return _or_contained(Decision(ask, problem), command, stack, ctx), offer


def _unreadable(command: SimpleCommand, stack: list[Layer]) -> str | None:
    """Why a command cannot run unasked whatever its program: expansions, assignments,
    wrapper options gsv does not know, redirections into files, network reads."""
    if command.dynamic:
        return "uses $ expansion or a substitution: gsv cannot read it ahead"
    unsafe = _unsafe_assignment(command.assignments)
    if unsafe:
        return f"sets {unsafe}, which changes what programs do"
    for layer in stack:
        problem = layer.problem or _unsafe_assignment(words_of(layer.assignments))
        if problem:
            return problem if layer.problem else f"sets {problem}, which changes what programs do"
    writes = [w for layer in stack for w in layer.writes] + list(command.writes)
    written = [w for w in writes if w not in HARMLESS_WRITES]
    if written:
        return f"writes to {written[0]}"
    if any(r.startswith(NETWORK_FILES) for r in command.reads):
        return "reads from the network"
    return None


def _configured(stack: list[Layer], command: SimpleCommand, ctx: LineContext) -> Decision | None:
    """The most cautious configured rule matching any layer (a deny rule for `rm` also
    catches `sudo rm`; an allow rule for `cat` does not allow `sudo cat`)."""
    found: Decision | None = None
    for layer in stack:
        if not layer.argv:
            continue
        decided = ctx.rule(SimpleCommand(words_of(layer.argv), command.writes))
        if decided is not None and layer.privileged and decided.verdict == ALLOW:
            continue
        if decided is not None:
            found = decided if found is None else most_cautious(found, decided)
    return found


def _runs_nothing(stack: list[Layer], ask: str) -> Decision:
    if stack and stack[0].argv and allowlist.program_name(stack[0].argv[0]) == "env":
        return Decision(ask, "env prints the environment, which may hold secrets")
    return Decision(ALLOW)


# -- the sandbox's latitude -------------------------------------------------------------
SANDBOXED = "runs inside the node's sandbox"


def _or_contained(
    decision: Decision, command: SimpleCommand, stack: list[Layer], ctx: LineContext
) -> Decision:
    """`decision` (an ask), or an allow when the sandbox contains what the command does."""
    inside = ctx.contained_write
    if decision.verdict != ASK or inside is None:
        return decision
    return Decision(ALLOW, SANDBOXED) if _contained(command, stack, inside, 0) else decision


def _contained(
    command: SimpleCommand, stack: list[Layer], inside: Callable[[str], bool], depth: int
) -> bool:
    """Whether a command asks only for what the sandbox contains: running a local program,
    a script, an interpreter; writing inside the workspace (`inside`). Still asking: a
    program gsv cannot name ahead (`$CMD`), one of the dangerous groups but inline code
    (it destroys workspace data, or needs what the sandbox withholds), git writing its
    read-only `.git`, a network read, a write the workspace does not hold, and a shell's
    inline script that is not contained in its turn."""
    if not command.words or depth > MAX_INLINE_DEPTH:
        return False
    if any(r.startswith(NETWORK_FILES) for r in command.reads):
        return False
    writes = [w for layer in stack for w in layer.writes] + list(command.writes)
    if not all(w in HARMLESS_WRITES or inside(w) for w in writes):
        return False
    for layer in stack:
        if layer.problem or layer.privileged:
            return False
        if layer.argv and not _layer_contained(layer.argv, inside, depth):
            return False
    return True


MAX_INLINE_DEPTH = 3
_UNNAMED = PATTERN_CHARS | set("$`{")  # in a program word: bash changes it first


def _layer_contained(argv: tuple[str, ...], inside: Callable[[str], bool], depth: int) -> bool:
    if not _UNNAMED.isdisjoint(argv[0]):
        return False
    program = os.path.basename(argv[0])
    if still_asks((program, *argv[1:])) is not None:
        return False
    if program == "git":
        parsed = allowlist.git_subcommand(argv[1:])
        return not isinstance(parsed, str) and parsed[0] in allowlist.GIT_READS
    if program in allowlist.SHELLS:
        script = _inline_script(argv)
        return script is None or _script_contained(script, inside, depth + 1)
    return True


def _script_contained(script: str, inside: Callable[[str], bool], depth: int) -> bool:
    """A shell's inline script (`sh -c '...'`): read with confidence, every command of it
    contained (read-only ones are)."""
    parsed = parse_script(script)
    return parsed.confident and all(
        _contained(command, stack, inside, depth) for command, stack in _stacked(parsed)
    )


def _unsafe_assignment(assignments: tuple[Word, ...]) -> str | None:
    for word in assignments:
        if not SAFE_ASSIGNMENT.match(word.text):
            return word.text.split("=", 1)[0].rstrip("+")
    return None


# -- off and denylist -------------------------------------------------------------------
def _off(stacked: Stacked, ctx: LineContext) -> Decision:
    found: Decision | None = None
    for command, stack in stacked:
        for layer in stack:
            if layer.argv:
                decided = ctx.rule(SimpleCommand(words_of(layer.argv), command.writes))
                found = combined(found, decided or Decision(ALLOW))
    return found or Decision(ALLOW)


def _denylist(parsed: ShellParse, stacked: Stacked, ctx: LineContext) -> Decision:
    """Rules and the preset, command by command; doubts ask (the pre-issue-29 policy)."""
    commands: list[SimpleCommand] = []
    _expand_all(parsed, stacked, commands, 0)
    found: Decision | None = None
    for command in commands:
        found = combined(found, ctx.rule(command) or Decision(ctx.default, "default decision"))
    outcome = found or Decision(ALLOW)
    if not parsed.confident and outcome.verdict == ALLOW:
        reason = f"cannot read the command with confidence ({'; '.join(parsed.doubts)})"
        return Decision(_asking(ctx), reason)
    if not parsed.commands and parsed.confident:
        return Decision(ctx.default, "default decision")
    return outcome


def _expand_all(
    parsed: ShellParse, stacked: Stacked, into: list[SimpleCommand], depth: int
) -> None:
    """Every command, what wrappers run and what `sh -c` runs; unsure ones doubt."""
    for command, stack in stacked:
        for layer in stack:
            if not layer.argv:
                continue
            into.append(SimpleCommand(words_of(layer.argv), command.writes))
            _look_inside(layer.argv, parsed, into, depth)


def _look_inside(
    argv: tuple[str, ...], parsed: ShellParse, into: list[SimpleCommand], depth: int
) -> None:
    program = allowlist.program_name(argv[0]) or argv[0]
    if program in UNSURE:
        parsed.doubt(f"{program} runs code gsv cannot read")
    elif program in allowlist.SHELLS:
        script = _inline_script(argv)
        if script is not None and depth < 4:
            inner = parse_script(script)
            _expand_all(inner, _stacked(inner), into, depth + 1)
            for doubt in inner.doubts:
                parsed.doubt(doubt)
        elif script is None and len(argv) > 1 and not argv[1].startswith("-"):
            parsed.doubt(f"{program} runs the script file {argv[1]}")


def _inline_script(argv: tuple[str, ...]) -> str | None:
    for index, word in enumerate(argv[1:], start=1):
        if word == "-c" or (word.startswith("-") and not word.startswith("--") and "c" in word):
            return argv[index + 1] if index + 1 < len(argv) else ""
    return None
