"""The approval policy: for a tool call, allow, ask a human, or deny (spec 7.7, hardened).

Order: built-in protections first (killing gsv, reading its secrets, editing its config
behind `config.set`'s back: always denied, no rule can allow them); then the user's
rules, then the standard preset (unless `toolApproval.preset` is "none"), first match
wins; then `defaultDecision`.

Shell calls (Bash, and Process write/submit) are judged command by command: every simple
command of the line (see `shell.parse_script`) gets its own first-matching rule, and the
most cautious outcome wins, so `ls && rm -rf x` cannot ride on an allow rule for `ls`.
A line gsv cannot read with confidence is at least `ask`.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from gsv_core.approval.shell import SimpleCommand, parse_script

ALLOW, ASK, DENY = "allow", "ask", "deny"
SEVERITY = {ALLOW: 0, ASK: 1, DENY: 2}
SHELL_TOOLS = frozenset({"Bash", "Process"})
FILE_TOOLS = frozenset({"Read", "Write", "Edit", "Glob", "Grep"})
WRITING_FILE_TOOLS = frozenset({"Write", "Edit"})
KILLERS = frozenset({"kill", "pkill", "killall", "skill"})


@dataclass(frozen=True)
class Decision:
    verdict: str
    reason: str = ""
    rule_id: str | None = None
    summary: str = ""  # what was judged (the command line, the path)

    @property
    def needs_human(self) -> bool:
        return self.verdict == ASK


@dataclass
class Rule:
    id: str
    decision: str
    tool: str = "*"
    node: str | None = None
    when: list[dict[str, Any]] = field(default_factory=list)
    programs: list[tuple[str, ...]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    outside_workspace: bool = False
    writes_outside_workspace: bool = False
    reason: str | None = None

    @classmethod
    def from_config(cls, raw: dict[str, Any], index: int) -> Rule:
        decision = raw.get("decision")
        if decision not in SEVERITY:
            raise ValueError(f"rule {raw.get('id', index)}: decision must be allow, ask or deny")
        return cls(
            id=str(raw.get("id") or f"rule-{index + 1}"),
            decision=decision,
            tool=str(raw.get("tool") or "*"),
            node=raw.get("node"),
            when=list(raw.get("when") or []),
            programs=[tuple(str(p).split()) for p in raw.get("programs") or []],
            paths=[str(p) for p in raw.get("paths") or []],
            outside_workspace=bool(raw.get("outsideWorkspace")),
            writes_outside_workspace=bool(raw.get("writesOutsideWorkspace")),
            reason=raw.get("reason"),
        )


def _preset() -> list[Rule]:
    def rule(rule_id: str, reason: str, programs: str = "", **extra: Any) -> Rule:
        listed = [tuple(p.split()) for p in programs.split(",") if p.strip()]
        return Rule(rule_id, ASK, programs=listed, reason=reason, **extra)

    return [
        rule("gsv-destructive", "deletes or overwrites data",
             "rm,rmdir,shred,dd,mkfs,wipefs,fdisk,parted,truncate,find -delete"),
        rule("gsv-privilege", "changes privileges or ownership",
             "sudo,su,doas,chmod,chown,chgrp,chattr,setfacl,passwd,usermod"),
        rule("gsv-system", "stops processes or changes the system",
             "kill,pkill,killall,shutdown,reboot,poweroff,halt,systemctl,service,launchctl,crontab"),
        rule("gsv-network", "talks to the network or publishes",
             "curl,wget,scp,rsync,ssh,sftp,nc,ncat,socat,git push,git remote,npm publish"),
        rule("gsv-history", "rewrites version control history",
             "git reset,git clean,git checkout --,git rebase,git filter-branch"),
        rule("gsv-inline-code", "runs inline code gsv cannot inspect",
             "python -c,python3 -c,perl -e,ruby -e,node -e,osascript"),
        Rule("gsv-write-outside", ASK, tool="*__Bash", writes_outside_workspace=True,
             reason="writes outside the node workspace"),
        Rule("gsv-file-outside", ASK, tool="*__Write", outside_workspace=True,
             reason="writes outside the node workspace"),
        Rule("gsv-edit-outside", ASK, tool="*__Edit", outside_workspace=True,
             reason="edits outside the node workspace"),
    ]  # fmt: skip


@functools.lru_cache(maxsize=256)
def standard_may_ask(bare_tool: str) -> bool:
    """Whether the standard preset, which every node's guard runs, can ever put a call
    of this tool before a human. Only then does the node look at an approval binding,
    so the gateway signs one only then (a Read or a Grep needs none)."""
    if bare_tool in SHELL_TOOLS:  # judged command by command; an unclear line asks
        return True
    return any(
        not rule.programs
        and not rule.writes_outside_workspace
        and rule.decision != ALLOW
        and (fnmatch.fnmatchcase(f"node__{bare_tool}", rule.tool)
             or fnmatch.fnmatchcase(bare_tool, rule.tool))
        for rule in _preset()
    )  # fmt: skip


@dataclass(frozen=True)
class Protected:
    """What no rule may allow: gsv's own processes, secret files and config files."""

    pids: frozenset[int] = frozenset()
    secret_paths: frozenset[str] = frozenset()  # never read or written
    config_paths: frozenset[str] = frozenset()  # never written (use config.set)


@dataclass
class CallFacts:
    """What the policy knows about one call."""

    tool: str  # the full name, e.g. "laptop__Bash"
    bare: str  # "Bash"
    node: str | None
    args: dict[str, Any]
    workspace: str | None = None  # the node's workspace, when it reported one


# distinct (tool, node) names whose matching rules a policy keeps
NAMED_RULES_KEPT = 1024


class ApprovalPolicy:
    def __init__(self, rules: list[Rule], default: str, protected: Protected) -> None:
        self.rules = rules
        self.default = default if default in SEVERITY else ALLOW
        self.protected = protected
        self._by_name: dict[tuple[str, str, str | None], tuple[Rule, ...]] = {}

    @classmethod
    def from_config(cls, config: dict[str, Any], protected: Protected) -> ApprovalPolicy:
        section = config.get("toolApproval") or {}
        rules = [Rule.from_config(raw, i) for i, raw in enumerate(section.get("rules") or [])]
        if section.get("preset", "standard") != "none":
            rules += _preset()
        return cls(rules, str(section.get("defaultDecision", ALLOW)), protected)

    def decide(self, call: CallFacts) -> Decision:
        script = _shell_script(call)
        if script is not None:
            return self._decide_shell(call, script)
        summary = _describe(call)
        guarded = self._protection(call, None)
        if guarded is not None:
            return Decision(DENY, guarded, "gsv-protected", summary)
        for rule in self._named(call):
            if (
                not rule.programs
                and not rule.writes_outside_workspace
                and _args_match(rule, call, None)
            ):
                return Decision(rule.decision, rule.reason or f"rule {rule.id}", rule.id, summary)
        return Decision(self.default, "default decision", None, summary)

    def _decide_shell(self, call: CallFacts, script: str) -> Decision:
        parsed = parse_script(script)
        outcome = Decision(ALLOW, "", None, script)
        for command in parsed.commands:
            guarded = self._protection(call, command)
            if guarded is not None:
                return Decision(DENY, guarded, "gsv-protected", script)
            judged = self._command_decision(call, command)
            if SEVERITY[judged.verdict] > SEVERITY[outcome.verdict]:
                outcome = judged
        if not parsed.confident and SEVERITY[outcome.verdict] < SEVERITY[ASK]:
            doubt = "; ".join(parsed.doubts)
            verdict = DENY if self.default == DENY else ASK
            reason = f"cannot read the command with confidence ({doubt})"
            outcome = Decision(verdict, reason, None, script)
        if not parsed.commands and parsed.confident:  # an empty line
            outcome = Decision(self.default, "default decision", None, script)
        return Decision(outcome.verdict, outcome.reason, outcome.rule_id, script)

    def _command_decision(self, call: CallFacts, command: SimpleCommand) -> Decision:
        for rule in self._named(call):
            if _args_match(rule, call, command):
                return Decision(rule.decision, rule.reason or f"rule {rule.id}", rule.id)
        return Decision(self.default, "default decision")

    def _named(self, call: CallFacts) -> tuple[Rule, ...]:
        """The rules whose tool and node patterns take this call, in order. Kept per
        name: the fnmatch calls were most of a file tool's check on the node."""
        key = (call.tool, call.bare, call.node)
        named = self._by_name.get(key)
        if named is None:
            if len(self._by_name) >= NAMED_RULES_KEPT:  # names come from callers: bounded
                self._by_name.clear()
            named = self._by_name[key] = tuple(r for r in self.rules if _names_match(r, call))
        return named

    # -- built-in protections -----------------------------------------------------------
    def _protection(self, call: CallFacts, command: SimpleCommand | None) -> str | None:
        words = list(command.argv) if command else [str(v) for v in _path_args(call)]
        writes = list(command.writes) if command else (
            [str(call.args.get("path", ""))] if call.bare in WRITING_FILE_TOOLS else []
        )  # fmt: skip
        if command is not None and command.program in KILLERS and self._kills_gsv(command):
            return "would stop the gsv gateway or node"
        for word in [*words, *writes]:
            if _mentions(word, self.protected.secret_paths):
                return "touches gsv's secret files"
        for target in writes:
            if _mentions(target, self.protected.config_paths):
                return "edits gsv's config files (use gsv config set)"
        if command is not None and _edits_in_place(command, self.protected.config_paths):
            return "edits gsv's config files (use gsv config set)"
        return None

    def _kills_gsv(self, command: SimpleCommand) -> bool:
        targets = [w for w in command.argv[1:] if not w.startswith("-") or w == "-1"]
        pids = {str(pid) for pid in self.protected.pids}
        return any(t in pids or t in ("-1", "0") or "gsv" in t.lower() for t in targets)


def _shell_script(call: CallFacts) -> str | None:
    if call.bare == "Bash":
        command = call.args.get("command")
        return command if isinstance(command, str) else ""
    if call.bare == "Process" and str(call.args.get("action", "")).strip().lower() in (
        "write",
        "submit",
    ):
        data = call.args.get("data")
        return data if isinstance(data, str) else ""
    return None


def _describe(call: CallFacts) -> str:
    if "path" in call.args:
        return f"{call.bare} {call.args['path']}"
    return call.bare


def _path_args(call: CallFacts) -> list[Any]:
    return [
        call.args[k] for k in ("path", "pattern", "workdir") if isinstance(call.args.get(k), str)
    ]


def _names_match(rule: Rule, call: CallFacts) -> bool:
    if not fnmatch.fnmatchcase(call.tool, rule.tool) and not fnmatch.fnmatchcase(
        call.bare, rule.tool
    ):
        return False
    return rule.node is None or fnmatch.fnmatchcase(call.node or "", rule.node)


def _args_match(rule: Rule, call: CallFacts, command: SimpleCommand | None) -> bool:
    """The rest of a rule (its name already matched): conditions, programs, paths."""
    if not all(_condition(c, call.args) for c in rule.when):
        return False
    if rule.programs and (command is None or not any(_runs(command, p) for p in rule.programs)):
        return False
    if rule.paths and not any(
        _under(str(p), prefix) for p in _path_args(call) for prefix in rule.paths
    ):
        return False
    if rule.outside_workspace and not _outside(call, _path_args(call)):
        return False
    return not rule.writes_outside_workspace or (
        command is not None and _outside(call, list(command.writes))
    )


def _runs(command: SimpleCommand, program: tuple[str, ...]) -> bool:
    """`rm` matches `rm -rf x`; `git push` matches `git push origin`; `find -delete`
    matches a find with -delete anywhere."""
    argv = (command.program, *command.argv[1:])
    if len(program) == 2 and program[1].startswith("-") and program[0] == "find":
        return argv[0] == "find" and program[1] in argv
    return argv[: len(program)] == program


def _condition(condition: dict[str, Any], args: dict[str, Any]) -> bool:
    """A spec 7.7 `when` condition: {path, op: equals|contains|startsWith|regex, value}."""
    value: Any = args
    for part in str(condition.get("path", "")).split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return False
    op, expected = condition.get("op"), condition.get("value")
    if op == "equals":
        return bool(value == expected)
    if not isinstance(value, str):
        return False
    if op == "contains":
        return str(expected) in value
    if op == "startsWith":
        return value.startswith(str(expected))
    if op == "regex":
        flags = re.IGNORECASE if "i" in str(condition.get("flags", "")) else 0
        try:
            return re.search(str(expected), value, flags) is not None
        except re.error:
            return False
    return False


def _norm(path: str) -> str:
    return posixpath.normpath(os.path.expanduser(path)) if path else path


def _under(path: str, prefix: str) -> bool:
    path, prefix = _norm(path), _norm(prefix)
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def _outside(call: CallFacts, paths: list[Any]) -> bool:
    """Whether any path leaves the node workspace (relative paths stay inside unless they
    climb out with `..`)."""
    for raw in paths:
        path = str(raw)
        if not path:
            continue
        if not (path.startswith("/") or path.startswith("~")):
            if _norm(path).startswith(".."):
                return True
            continue
        if call.workspace is None or not _under(path, call.workspace):
            return True
    return False


def _mentions(word: str, paths: frozenset[str]) -> bool:
    if not word:
        return False
    normalised = _norm(word)
    return any(normalised == p or normalised.endswith(p) or p in word for p in paths)


def _edits_in_place(command: SimpleCommand, paths: frozenset[str]) -> bool:
    """`sed -i`, `tee`, `truncate`, `dd of=` and the destination of `cp`/`mv`/`install`/`ln`
    aimed at a protected config file."""
    program, args = command.program, command.argv[1:]
    operands = [a for a in args if not a.startswith("-")]
    in_place = program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args)
    if in_place or program in ("tee", "truncate"):
        targets = operands
    elif program in ("cp", "mv", "install", "ln"):
        targets = operands[-1:]
    elif program == "dd":
        targets = [a.removeprefix("of=") for a in args if a.startswith("of=")]
    else:
        return False
    return any(_mentions(target, paths) for target in targets)
