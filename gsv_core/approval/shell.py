"""A conservative reading of shell command lines for approval decisions.

`parse_script()` splits a command line into the simple commands it would run -- across
`;`, `&&`, `||`, `|`, `&`, subshells, `$(...)` and backticks, `sh -c '...'`, and wrappers
such as `env`, `sudo`, `xargs`, `nohup`, `timeout` -- with their write redirections. It
never executes anything. When the line uses something it cannot follow with confidence
(heredocs, `eval`, variables as command names, control structures, unbalanced quotes) it
says so (`confident=False`) and the caller asks a human instead of guessing.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", "\n", ";;"})
REDIRECTS_OUT = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
REDIRECTS_IN = frozenset({"<", "<&", "<>"})
HEREDOC = frozenset({"<<", "<<-", "<<<"})
KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "select",
        "function",
        "{",
        "}",
        "[[",
        "]]",
        "!",
    }
)
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "ash"})
UNSURE_PROGRAMS = frozenset({"eval", "source", ".", "exec"})
MAX_DEPTH = 6
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")
PUNCTUATION = frozenset(";&|()<>")


@dataclass(frozen=True)
class SimpleCommand:
    argv: tuple[str, ...]
    writes: tuple[str, ...] = ()  # redirection targets written to

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else ""


@dataclass
class ShellParse:
    commands: list[SimpleCommand] = field(default_factory=list)
    confident: bool = True
    doubts: list[str] = field(default_factory=list)

    def doubt(self, why: str) -> None:
        self.confident = False
        self.doubts.append(why)


def parse_script(script: str) -> ShellParse:
    result = ShellParse()
    _parse_into(script, result, depth=0)
    if not result.commands and result.confident and script.strip():
        result.doubt("no command found")
    return result


def _parse_into(script: str, result: ShellParse, depth: int) -> None:
    if depth > MAX_DEPTH:
        result.doubt("commands nested too deeply")
        return
    for inner in _substitutions(script):
        _parse_into(inner, result, depth + 1)
    tokens = _tokens(script, result)
    if tokens is None:
        return
    for words in _split(tokens, result):
        command = _simple(words, result)
        if command is not None:
            _expand(command, result, depth)


def _tokens(script: str, result: ShellParse) -> list[str] | None:
    lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError as exc:  # unbalanced quotes
        result.doubt(f"cannot tokenize: {exc}")
        return None


def _substitutions(script: str) -> list[str]:
    """The insides of `$(...)`, `<(...)`, `>(...)` and backticks (nested ones included
    through recursion), read from the raw text so quoting cannot hide them."""
    found: list[str] = []
    index = 0
    while (match := SUBSTITUTION.search(script, index)) is not None:
        start = match.end()
        if match.group() == "`":
            end = script.find("`", start)
            if end == -1:
                found.append(script[start:])
                break
            found.append(script[start:end])
            index = end + 1
            continue
        depth, position = 1, start
        while position < len(script) and depth:
            depth += {"(": 1, ")": -1}.get(script[position], 0)
            position += 1
        found.append(script[start : position - 1] if depth == 0 else script[start:])
        index = position
    return found


def _split(tokens: list[str], result: ShellParse) -> list[list[str]]:
    """Simple commands between separators; parentheses (subshells, process
    substitution) are boundaries too, their insides read like any other command."""
    commands: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        operator = set(token) <= PUNCTUATION
        grouping = operator and bool(set(token) & {"(", ")"})
        redirect = token in REDIRECTS_OUT or token in REDIRECTS_IN or token in HEREDOC
        if token in SEPARATORS or grouping or (operator and not redirect):
            if operator and not grouping and token not in SEPARATORS:
                result.doubt(f"unusual operator {token!r}")
            if current:
                commands.append(current)
            current = []
            continue
        current.append(token)
    if current:
        commands.append(current)
    return commands


def _simple(words: list[str], result: ShellParse) -> SimpleCommand | None:
    argv: list[str] = []
    writes: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else None
        if word in HEREDOC:
            result.doubt("heredoc or here-string")
            index += 2
            continue
        if word in REDIRECTS_OUT or word in REDIRECTS_IN:
            if following is None:
                result.doubt(f"redirection {word} without a target")
            elif word in REDIRECTS_OUT and not (word == ">&" and following.isdigit()):
                writes.append(following)
            if argv and argv[-1].isdigit():  # `2>` : the digit was a file descriptor
                argv.pop()
            index += 2
            continue
        if not argv and ASSIGNMENT.match(word):
            index += 1  # leading VAR=value
            continue
        argv.append(word)
        index += 1
    if not argv:
        return SimpleCommand((), tuple(writes)) if writes else None
    if argv[0] in KEYWORDS or argv[0].endswith("()"):
        result.doubt(f"shell control structure {argv[0]!r}")
    if argv[0].startswith("$") or "$" in os.path.basename(argv[0]):
        result.doubt("the command name comes from a variable")
    return SimpleCommand(tuple(argv), tuple(writes))


def _expand(command: SimpleCommand, result: ShellParse, depth: int) -> None:
    """Record a command, and also what it runs (wrappers, `sh -c`)."""
    result.commands.append(command)
    argv = list(command.argv)
    if not argv:
        return
    program = command.program
    if program in UNSURE_PROGRAMS:
        result.doubt(f"{program} runs code gsv cannot read")
        return
    if program in SHELLS:
        script = _inline_script(argv)
        if script is not None:
            _parse_into(script, result, depth + 1)
        elif len(argv) > 1 and not argv[1].startswith("-"):
            result.doubt(f"{program} runs the script file {argv[1]}")
        return
    inner = _unwrap(argv)
    if inner:
        _expand(SimpleCommand(tuple(inner), command.writes), result, depth + 1)


def _inline_script(argv: list[str]) -> str | None:
    for index, word in enumerate(argv[1:], start=1):
        if word == "-c" or (word.startswith("-") and not word.startswith("--") and "c" in word):
            return argv[index + 1] if index + 1 < len(argv) else ""
    return None


def _unwrap(argv: list[str]) -> list[str]:
    """The command a wrapper runs (`env X=1 rm a` -> `rm a`), or [] for none."""
    program = os.path.basename(argv[0])
    rest = argv[1:]
    if program in ("env", "nohup", "time", "command", "builtin", "exec", "stdbuf", "chroot"):
        return _skip_options(rest, assignments=program == "env")
    if program in ("sudo", "doas"):
        return _skip_options(rest, with_values={"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U"})
    if program == "nice":
        return _skip_options(rest, with_values={"-n"})
    if program == "timeout":
        remaining = _skip_options(rest, with_values={"-s", "-k", "--signal", "--kill-after"})
        return remaining[1:]  # the duration
    if program == "xargs":
        return _skip_options(rest, with_values={"-n", "-P", "-I", "-L", "-d", "-E", "-s", "-a"})
    if program == "watch":
        return _skip_options(rest, with_values={"-n", "-d"})
    return []


def _skip_options(
    words: list[str],
    *,
    assignments: bool = False,
    with_values: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return words[index + 1 :]
        if assignments and ASSIGNMENT.match(word):
            index += 1
            continue
        if word.startswith("-") and len(word) > 1:
            index += 2 if word in with_values else 1
            continue
        return words[index:]
    return []
