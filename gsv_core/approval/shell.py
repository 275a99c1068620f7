"""A conservative, linear-time reading of shell command lines for approval decisions.

`parse_script()` splits a line into the simple commands it would run -- across `;`, `&&`,
`||`, `|`, `&`, newlines, subshells, `$(...)`, backticks and process substitutions -- with
their redirections. It never executes anything and reads each character a bounded number
of times (a substitution's inside is read once more per level of nesting, at most
`MAX_DEPTH`), so a long line costs time in proportion to its length; the old `shlex`
reader was quadratic.

It does not try to understand everything bash does. Whatever it cannot read with
confidence -- heredocs, line continuations, `$'...'` quoting, control structures, function
definitions, unbalanced quotes or parentheses, control characters other than tab and
newline -- it records as a doubt (`confident=False`), and the policy asks a human instead
of guessing. Words that bash would change before running them (`$VAR`, `$(...)`, unquoted
globs) are marked, so the allowlist can refuse to vouch for them; for brace expansion
(`{a,b}`, `{1..3}`) the words bash makes are kept, for the secret check.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

from gsv_core.approval.braces import brace_words
from gsv_core.bidi import has_bidi

MAX_DEPTH = 6
KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
    "case", "esac", "select", "function", "coproc", "{", "}", "[[", "]]", "!"})  # fmt: skip
# reserved words after which bash reads a command: `{ cd DIR; }` runs `cd DIR`
_PREFIXES = frozenset({"{", "!", "if", "then", "elif", "else", "while", "until", "do"})
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# a run of characters with no meaning to the shell; read in one step (what keeps it fast)
_PLAIN = re.compile(r"[^ \t\n'\"\\$`;&|()<>*?\[{]+")
# the characters that make a word a pathname pattern bash expands (`*.py`, `a?`, `[ab]`):
# the approval reader's one list of them (always.py, lines.py and protected.py read it)
PATTERN_CHARS = frozenset("*?[")
_DOUBLE_PLAIN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
# bash separates words with space and tab only: a carriage return, a form feed or a
# non-breaking space is an ordinary character of a word (`ls \r#` is not a comment)
_BLANKS = frozenset(" \t")
_REDIRECT = re.compile(r"<<<|<<-|<<|<>|<&|<|>>|>&|>\||>")
_ENDS_WORD = frozenset(" \t\n;&|()<>")
# control characters other than tab and newline: bash reads them as parts of words (and
# drops NUL from what it reads on stdin), but the approval prompt a human reads may not
# show them -- a carriage return makes a terminal write the rest over the start
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Word:
    text: str  # quotes removed; expansions kept as written (`$HOME/x`)
    dynamic: bool = False  # bash changes it before running: `$...`, `$(...)`, backticks
    glob: bool = False  # an unquoted `*`, `?`, `[` or `{`: may become other words
    braces: tuple[str, ...] = ()  # the words bash's brace expansion makes of it, if any


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[Word, ...]
    writes: tuple[str, ...] = ()  # targets of output redirections (`>`, `>>`, `&>` ...)
    reads: tuple[str, ...] = ()  # targets of input redirections (`<`)
    assignments: tuple[Word, ...] = ()  # leading NAME=value
    # the separator before it (`&&`: it runs only when the command before succeeded) and
    # whether it runs in the line's own shell (not in `( )`, `$( )`, a pipe or with `&`):
    # what a `cd` there changes for the commands after it
    joined: str = ""
    shared: bool = True

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words)

    @property
    def program(self) -> str:
        return os.path.basename(self.words[0].text) if self.words else ""

    @property
    def dynamic(self) -> bool:
        return any(w.dynamic for w in (*self.words, *self.assignments))


@dataclass
class ShellParse:
    commands: list[SimpleCommand] = field(default_factory=list)
    confident: bool = True
    doubts: list[str] = field(default_factory=list)

    def doubt(self, why: str) -> None:
        self.confident = False
        if why not in self.doubts and len(self.doubts) < 8:
            self.doubts.append(why)


def parse_script(script: str) -> ShellParse:
    result = ShellParse()
    if _CONTROL.search(script):
        result.doubt("a control character (carriage return, NUL, form feed ...)")
    if has_bidi(script):
        result.doubt("a Unicode direction control (U+202E ...), which reorders what is shown")
    _Lexer(script, result, 0).read_commands(stop=None)
    if not result.commands and result.confident and script.strip():
        result.doubt("no command found")
    return result


def expand_braces(command: SimpleCommand) -> SimpleCommand:
    """The command as bash runs it after brace expansion: `cat ~/{a,b}` is `cat ~/a ~/b`
    (a word made with `*`, `?` or `[` is a pattern: a `*` may stand for too many words)."""
    if not any(w.braces for w in command.words):
        return command
    words = tuple(
        made
        for w in command.words
        for made in ([Word(b, w.dynamic, is_pattern(b)) for b in w.braces] if w.braces else [w])
    )
    return replace(command, words=words)


def is_pattern(text: str) -> bool:
    """Whether `text` holds a pattern character (quoting aside: for words already read)."""
    return not PATTERN_CHARS.isdisjoint(text)


def words_of(argv: list[str] | tuple[str, ...]) -> tuple[Word, ...]:
    """Literal words, for commands built from text that was already read (`sh -c`)."""
    return tuple(Word(a) for a in argv)


class _Lexer:
    """Reads one source from `pos`; substitutions are read by a nested lexer at the same
    position (so nothing is read twice at one level)."""

    def __init__(self, src: str, result: ShellParse, depth: int, pos: int = 0) -> None:
        self.src, self.result, self.depth, self.pos = src, result, depth, pos
        self.parens = 0
        self.joined = ""  # the last separator read

    # -- commands ---------------------------------------------------------------------
    def read_commands(self, stop: str | None) -> None:
        """Read commands up to the end, or up to the `)` closing a `$(` (stop=")")."""
        if self.depth > MAX_DEPTH:  # the line asks anyway; do not recurse further
            self.result.doubt("commands nested too deeply")
            self.pos = len(self.src)
            return
        while self.pos < len(self.src):
            if self._read_command(stop):
                return
        if stop is not None:
            self.result.doubt("unclosed substitution")

    def _read_command(self, stop: str | None) -> bool:
        """One simple command; True when the closing `)` of a substitution was reached."""
        words: list[Word] = []
        assignments: list[Word] = []
        writes: list[str] = []
        reads: list[str] = []
        closed = False
        joined, ended = self.joined, ""
        apart = self.depth > 0 or self.parens > 0 or joined in ("|", "|&")
        while self.pos < len(self.src):
            char = self.src[self.pos]
            if char in _BLANKS:
                self.pos += 1
            elif char == "#":  # between words: a comment
                end = self.src.find("\n", self.pos)
                self.pos = len(self.src) if end == -1 else end
            elif char in "\n;&|":
                if self._separator(writes):
                    continue
                ended = self.joined
                break
            elif char == "(":
                self._open_paren(bool(words or assignments))
                break
            elif char == ")":
                closed = self._close_paren(stop)
                break
            elif char in "<>":
                self._redirection(writes, reads)
            else:
                word, fd = self._word()
                if fd is not None:
                    self._redirection(writes, reads)  # `2>x` writes x too
                elif not (words or assignments or word.dynamic) and word.text in _PREFIXES:
                    self.result.doubt(f"shell control structure {word.text!r}")
                elif not words and ASSIGNMENT.match(word.text):
                    assignments.append(word)
                else:
                    words.append(word)
        shared = not (apart or self.parens > 0 or ended in ("|", "|&", "&"))
        self._finish(SimpleCommand(tuple(words), tuple(writes), tuple(reads),
                                   tuple(assignments), joined, shared))  # fmt: skip
        return closed

    def _separator(self, writes: list[str]) -> bool:
        """Consume `;`, `&&`, `|`, newline ...; True if it was `&>` (a redirection)."""
        src, pos = self.src, self.pos
        if src.startswith("&>", pos):
            self.pos += 1
            self._redirection(writes, [])
            return True
        two = src[pos : pos + 2]
        if two == ";&" or two == ";;":
            self.result.doubt("case statement")
        self.joined = two if two in ("&&", "||", "|&", ";;", ";&") else src[pos]
        self.pos += len(self.joined)
        return False

    def _open_paren(self, after_words: bool) -> None:
        self.pos += 1
        if after_words:
            self.result.doubt("function definition or unexpected '('")
        elif self.src.startswith("(", self.pos):
            self.result.doubt("arithmetic command")
        self.parens += 1

    def _close_paren(self, stop: str | None) -> bool:
        self.pos += 1
        if self.parens:
            self.parens -= 1
            return False
        if stop == ")":
            return True
        self.result.doubt("unbalanced ')'")
        return False

    def _finish(self, command: SimpleCommand) -> None:
        words = command.words
        if not (words or command.assignments or command.writes or command.reads):
            return
        if words and not words[0].dynamic and words[0].text in KEYWORDS:
            self.result.doubt(f"shell control structure {words[0].text!r}")
        if words and words[0].dynamic:
            self.result.doubt("the command name comes from a variable or substitution")
        if words and words[0].braces:
            self.result.doubt("the command name comes from a brace expansion")
        self.result.commands.append(command)

    # -- redirections -----------------------------------------------------------------
    def _redirection(self, writes: list[str], reads: list[str]) -> None:
        match = _REDIRECT.match(self.src, self.pos)
        op = match.group() if match else self.src[self.pos]
        self.pos += len(op)
        if op.startswith("<<") and op != "<<<":
            self.result.doubt("heredoc")
        if op in ("<", ">") and self.src.startswith("(", self.pos):
            self.result.doubt("process substitution")
            self._substitution(self.pos + 1)
            return
        target = self._target()
        if target is None:
            self.result.doubt(f"redirection {op} without a target")
            return
        if target.dynamic or target.glob:
            self.result.doubt("a redirection target that bash expands")
        if op.endswith("&") and _fd_like(target.text):
            return  # `2>&1`, `<&0`, `>&-`: file descriptors, not files
        names = target.braces or (target.text,)  # `< a{b..b}` reads `ab`
        if op in ("<", "<&", "<>"):
            reads.extend(names)
        if ">" in op:
            writes.extend(names)

    def _target(self) -> Word | None:
        while self.pos < len(self.src) and self.src[self.pos] in _BLANKS:
            self.pos += 1
        if self.pos >= len(self.src) or self.src[self.pos] in _ENDS_WORD:
            return None
        return self._word()[0]

    # -- words ------------------------------------------------------------------------
    def _word(self) -> tuple[Word, str | None]:
        """A word, and the file descriptor it names when it is `2` in `2>`."""
        src = self.src
        parts: list[str] = []
        literal: set[int] = set()  # parts brace expansion leaves alone: quoted, `$...`
        dynamic = glob = quoted = braced = False
        while self.pos < len(src):
            if self._take(_PLAIN, parts):
                continue
            char = src[self.pos]
            if char in _ENDS_WORD:
                if char in "<>" and not quoted and "".join(parts).isdigit():
                    return Word("".join(parts)), "".join(parts)
                break
            if char == "'":
                parts.append(self._single_quoted())
                quoted = True
            elif char == '"':
                text, expands = self._double_quoted()
                parts.append(text)
                dynamic, quoted = dynamic or expands, True
            elif char == "\\":
                parts.append(self._escaped())
            elif char in "$`":
                parts.append(self._expansion())
                dynamic = True
            else:  # * ? [ {
                glob, braced = True, braced or char == "{"
                parts.append(char)
                self.pos += 1
                continue
            literal.add(len(parts) - 1)
        braces = brace_words(parts, literal) if braced else ()
        return Word("".join(parts), dynamic, glob, braces), None

    def _take(self, plain: re.Pattern[str], parts: list[str]) -> bool:
        """Move a run of `plain` characters at the position into `parts`; False if none.
        (A run at a time keeps long words from costing a loop turn per character.)"""
        match = plain.match(self.src, self.pos)
        if match:
            parts.append(match.group())
            self.pos = match.end()
        return match is not None

    def _single_quoted(self) -> str:
        end = self.src.find("'", self.pos + 1)
        if end == -1:
            self.result.doubt("unclosed quote")
            text, self.pos = self.src[self.pos + 1 :], len(self.src)
            return text
        text, self.pos = self.src[self.pos + 1 : end], end + 1
        return text

    def _double_quoted(self) -> tuple[str, bool]:
        src, expands = self.src, False
        parts: list[str] = []
        self.pos += 1
        while self.pos < len(src):
            if self._take(_DOUBLE_PLAIN, parts):
                continue
            char = src[self.pos]
            if char == '"':
                self.pos += 1
                return "".join(parts), expands
            if char == "\\":
                following = src[self.pos + 1 : self.pos + 2]
                if following == "\n":
                    self.result.doubt("line continuation")
                keep = following if following in '$`"\\\n' else "\\" + following
                parts.append(keep)
                self.pos += 2
            else:
                parts.append(self._expansion())
                expands = True
        self.result.doubt("unclosed quote")
        return "".join(parts), expands

    def _escaped(self) -> str:
        following = self.src[self.pos + 1 : self.pos + 2]
        self.pos += 2
        if following in ("\n", ""):
            self.result.doubt("line continuation" if following else "a trailing backslash")
            return ""
        return following

    def _expansion(self) -> str:
        """`$name`, `${...}`, `$(...)`, `$((...))`, `$'...'`, backticks: kept as written."""
        src, start = self.src, self.pos
        if src[start] == "`":
            end = src.find("`", start + 1)
            if end == -1:
                self.result.doubt("unclosed backtick")
                end = len(src)
            _Lexer(src[start + 1 : end], self.result, self.depth + 1).read_commands(stop=None)
            self.pos = min(end + 1, len(src))
        elif src.startswith("$((", start):
            self.result.doubt("arithmetic expansion")
            self._skip_balanced(start + 1)
        elif src.startswith("$(", start):
            self._substitution(start + 2)
        elif src.startswith("${", start):
            end = src.find("}", start)
            self.pos = len(src) if end == -1 else end + 1
            if "(" in src[start : self.pos] or "`" in src[start : self.pos]:
                self.result.doubt("a substitution inside ${...}")
        elif src.startswith("$'", start) or src.startswith('$"', start):
            self.result.doubt("$'...' or $\"...\" quoting")
            self.pos += 1
            return "$" + (
                self._single_quoted() if src[self.pos] == "'" else self._double_quoted()[0]
            )
        else:
            match = _NAME.match(src, start + 1)
            self.pos = match.end() if match else start + 1
        return src[start : self.pos]

    def _substitution(self, inner: int) -> None:
        """Read `$(...)` / `<(...)` from its inside to its `)` as commands of their own."""
        lexer = _Lexer(self.src, self.result, self.depth + 1, inner)
        lexer.read_commands(stop=")")
        self.pos = lexer.pos

    def _skip_balanced(self, start: int) -> None:
        depth, pos, src = 0, start, self.src
        while pos < len(src):
            char = src[pos]
            depth += (char == "(") - (char == ")")
            pos += 1
            if depth == 0:
                break
        self.pos = pos


def _fd_like(text: str) -> bool:
    return text.isdigit() or text == "-"
