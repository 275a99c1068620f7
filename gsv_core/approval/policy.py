"""The approval policy: for a tool call, allow, ask a human, or deny (the
model in one page: docs/approvals.md).

Order: built-in protections first (killing gsv, reading or writing its secrets: always
denied, in every mode, no rule can allow them); then, for shell lines, the mode
(`toolApproval.mode`: `allowlist` by default, `denylist`, `off`; see `lines.py`); for
other tools the user's rules, then the standard preset (unless `toolApproval.preset` is
"none"), first match wins; then `defaultDecision`. MCP tools ask in the preset unless their
server marks them read-only (`CallFacts.read_only`, docs/mcp.md#approvals).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from gsv_core.approval import always
from gsv_core.approval.credentials import CREDENTIAL_FILES
from gsv_core.approval.dangerous import GROUPS
from gsv_core.approval.decision import ALLOW
from gsv_core.approval.decision import ASK
from gsv_core.approval.decision import DENY
from gsv_core.approval.decision import SEVERITY
from gsv_core.approval.decision import Decision
from gsv_core.approval.lines import ALLOWLIST
from gsv_core.approval.lines import DEFAULT_MAX_BYTES
from gsv_core.approval.lines import DENYLIST
from gsv_core.approval.lines import MODES
from gsv_core.approval.lines import OFF
from gsv_core.approval.lines import LineContext
from gsv_core.approval.lines import judge_line
from gsv_core.approval.protected import SECRETS
from gsv_core.approval.protected import Disk
from gsv_core.approval.protected import Protected
from gsv_core.approval.protected import SecretCheck
from gsv_core.approval.shell import SimpleCommand
from gsv_core.bidi import escape_bidi
from gsv_core.protocol.schemas.nodes import MCP_PREFIX
from gsv_core.workspace.prompt import INSTRUCTION_FILES

__all__ = ["ALLOW", "ALLOWLIST", "ASK", "DENY", "DENYLIST", "OFF", "SEVERITY", "ApprovalPolicy",
           "CallFacts", "Decision", "Protected", "Rule", "node_may_ask",
           "standard_may_ask"]  # fmt: skip

SHELL_TOOLS = frozenset({"Bash", "Process"})
WRITING_FILE_TOOLS = frozenset({"Write", "Edit"})
# Files whose content decides what runs later, when nobody looks: written unasked, they
# turn the next allowlisted `git status` or `ls` into the model's own code. Matched
# against the normalised path (`.git/./config` is `.git/config`), case-insensitively
# (macOS and Windows file systems fold case: `.GIT/config` is git's config there).
# - anything in a git directory (`.git/config` sets core.fsmonitor, `.git/commondir`
#   sends git to a config elsewhere), a `.git` pointer file (`gitdir: ../elsewhere`),
#   any `*.git` directory (a bare repository), and the files that make a directory a
#   repository wherever it is: git recognises one only with a `HEAD` file in it, so
#   writing `HEAD` asks and a repository laid out by hand (`evil/HEAD`, `evil/config`,
#   `evil/objects/`, `evil/refs/`) cannot be made unasked; the node also refuses writes
#   into a repository directory it finds on disk (`gsv_core/node/guard.py`);
# - git's own user config (`~/.gitconfig`, `~/.config/git/`).
GIT_CONTROL = re.compile(
    r"(^|/)([^/]*\.git(/|$)|(HEAD|commondir|gitdir)$|\.gitconfig$|\.config/git(/|$))",
    re.IGNORECASE,
)
# start-up files run by shells (the node runs Bash as `$SHELL -lc`, which reads the
# login profile), ssh, the desktop session, systemd and cron, wherever they are: a node
# whose workspace holds them (a node started from $HOME) must not let them be written
# unasked
STARTUP_FILES = re.compile(
    r"(^|/)(\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv"
    r"|zlogin|zlogout|kshrc|mkshrc|cshrc|tcshrc|login|logout|xprofile|xsessionrc|xinitrc"
    r"|pam_environment)$|\.bashrc\.d/|\.ssh(/|$)|\.config/(fish|autostart|systemd"
    r"|environment\.d)(/|$)|\.local/share/systemd(/|$)"
    r"|(spool/cron|usr/lib/cron|etc/cron\.[a-z]+|etc/crontab)(/|$))",
    re.IGNORECASE,
)

# gsv__Cron actions that only read
CRON_READS = frozenset({"status", "list", "runs"})
# workspace paths (relative to the agent root, normalised) the gateway loads into the
# system prompt as instructions (gsv_core/workspace/prompt.py `prompt_file_paths`), and
# the skills, whose descriptions it lists and whose `always` ones it injects. Daily
# memory (`memory/...`) and MEMORY.md are the agent's notes: they stay unasked. Matched
# case-insensitively (a case-folding file system stores `agents.md` as AGENTS.md).
PROMPT_FILES = re.compile(
    "(" + "|".join(re.escape(name) for name in INSTRUCTION_FILES) + ")|skills(/.*)?",
    re.IGNORECASE | re.DOTALL,
)


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
    # the preset's: the call's `path`, normalised, must match (not from config)
    path_pattern: re.Pattern[str] | None = None
    # the preset's: a test of the whole call (not from config)
    test: Callable[[CallFacts], bool] | None = None

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


def _preset(shell: bool = True) -> list[Rule]:
    """The standard rules: with `shell`, the denylist of dangerous programs too."""
    files = [
        Rule("gsv-file-outside", ASK, tool="*__Write", outside_workspace=True,
             reason="writes outside the node workspace"),
        Rule("gsv-edit-outside", ASK, tool="*__Edit", outside_workspace=True,
             reason="edits outside the node workspace"),
        *(Rule(f"gsv-git-{tool.lower()}", ASK, tool=f"*__{tool}", reason="changes what git runs",
               path_pattern=GIT_CONTROL)
          for tool in ("Write", "Edit")),
        *(Rule(f"gsv-credentials-{tool.lower()}", ASK, tool=f"*__{tool}",
               path_pattern=CREDENTIAL_FILES,
               reason="reads or writes where credentials live (keys, tokens, browser profiles)")
          for tool in ("Read", "Grep", "Write", "Edit")),
        *(Rule(f"gsv-startup-{tool.lower()}", ASK, tool=f"*__{tool}", path_pattern=STARTUP_FILES,
               reason="changes what runs when a shell, a session or a scheduled job starts")
          for tool in ("Write", "Edit")),
    ]  # fmt: skip
    rules = files + _native_rules() + _mcp_rules()
    return _dangerous_programs() + rules if shell else rules


def _native_rules() -> list[Rule]:
    """The gateway's own tools that act for the owner where nobody watches: a message to a
    stranger, work scheduled for later, the instructions every later prompt carries, data
    posted to a web site. Each asks; their ordinary forms stay unasked."""
    return [
        Rule("gsv-message-elsewhere", ASK, tool="gsv__Message", test=_to_elsewhere,
             reason="sends a message to someone other than this conversation"),
        Rule("gsv-cron-change", ASK, tool="gsv__Cron", test=_changes_cron,
             reason="schedules or changes work that runs later without you"),
        *(Rule(f"gsv-prompt-{tool.lower()}", ASK, tool=f"gsv__{tool}", test=_writes_prompt,
               reason="changes the instructions the agent reads every turn")
          for tool in ("WriteFile", "EditFile", "DeleteFile", "WebFetch")),
        Rule("gsv-web-send", ASK, tool="gsv__WebFetch", test=_sends_data,
             reason="sends data to a web site"),
    ]  # fmt: skip


def _mcp_rules() -> list[Rule]:
    """An MCP server's tool can do whatever its server can (a filesystem server reaching
    the home directory writes `.bashrc`): it asks unless the server marks it read-only
    (`readOnlyHint: true` in its MCP annotations, as the server lists it now)."""
    return [
        Rule("gsv-mcp-unmarked", ASK, tool=f"{MCP_PREFIX}*__*", test=_mcp_unmarked,
             reason="the MCP server does not mark this tool read-only"),
    ]  # fmt: skip


def _mcp_unmarked(call: CallFacts) -> bool:
    return call.node is None and call.tool.startswith(MCP_PREFIX) and not call.read_only


def _to_elsewhere(call: CallFacts) -> bool:
    return call.elsewhere


def _changes_cron(call: CallFacts) -> bool:
    """Everything but reading (`status`, `list`, `runs`): add, update, remove, run."""
    return call.args.get("action") not in CRON_READS


def _sends_data(call: CallFacts) -> bool:
    method, body = call.args.get("method", "GET"), call.args.get("body")
    return str(method).upper() not in ("GET", "HEAD") or body is not None


def _writes_prompt(call: CallFacts) -> bool:
    """A workspace write, edit or delete (or a WebFetch saved) of a file the gateway puts
    into every prompt (`gsv_core/workspace/prompt.py`) or of a skill."""
    path = call.args.get("saveTo" if call.bare == "gsv__WebFetch" else "path")
    if not isinstance(path, str):
        return False
    segments = [s for s in path.strip().split("/") if s not in ("", ".")]
    return PROMPT_FILES.fullmatch("/".join(segments)) is not None


def _dangerous_programs() -> list[Rule]:
    groups = [Rule(g.rule_id, ASK, programs=list(g.programs), reason=g.reason) for g in GROUPS]
    outside = Rule("gsv-write-outside", ASK, tool="*__Bash", writes_outside_workspace=True,
                   reason="writes outside the node workspace")  # fmt: skip
    return [*groups, outside]


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


READING_FILE_TOOLS = frozenset({"Read", "Grep"})


def node_may_ask(bare_tool: str, args: dict[str, Any]) -> bool:
    """`standard_may_ask`, sharpened by the call's arguments where that is cheap: a Read
    or a Grep can ask only where credentials live (CREDENTIAL_FILES), so an ordinary one
    needs no binding (and the gateway spends no signature on it)."""
    if not standard_may_ask(bare_tool):
        return False
    if bare_tool in READING_FILE_TOOLS:
        path = args.get("path")
        return isinstance(path, str) and CREDENTIAL_FILES.search(_norm(path)) is not None
    return True


@dataclass
class CallFacts:
    """What the policy knows about one call."""

    tool: str  # the full name, e.g. "laptop__Bash"
    bare: str  # "Bash"
    node: str | None
    args: dict[str, Any]
    workspace: str | None = None  # the node's workspace, when it reported one
    # a gsv__Message to someone who is neither the calling conversation nor one of the
    # channel's owners or allowFrom entries (the gateway resolves it as the tool would)
    elsewhere: bool = False
    # the node runs commands in an OS sandbox (its nodeRuntime.sandbox), so what runs
    # unasked runs confined (docs/sandbox.md)
    sandboxed: bool = False
    # an MCP tool its server marks `readOnlyHint: true` (the gateway reads the running
    # server's current tool list)
    read_only: bool = False


# distinct (tool, node) names whose matching rules a policy keeps
NAMED_RULES_KEPT = 1024


@dataclass(frozen=True)
class ShellSettings:
    """How shell lines are judged (`toolApproval.mode`, `.allow`, `.maxCommandBytes`)."""

    mode: str = ALLOWLIST
    allow: tuple[tuple[str, ...], ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    # `toolApproval.sandboxed`: the sandbox's latitude on sandboxed nodes (lines.py)
    sandbox_latitude: bool = True

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> ShellSettings:
        mode = section.get("mode", ALLOWLIST)
        max_bytes = section.get("maxCommandBytes", DEFAULT_MAX_BYTES)
        return cls(
            mode if mode in MODES else ALLOWLIST,
            always.load_rules(section.get("allow")),
            max_bytes if isinstance(max_bytes, int) and max_bytes > 0 else DEFAULT_MAX_BYTES,
            section.get("sandboxed", "auto") != "ask",
        )


class ApprovalPolicy:
    def __init__(
        self,
        rules: list[Rule],
        default: str,
        protected: Protected,
        shell: ShellSettings | None = None,
    ) -> None:
        self.rules = rules
        self.default = default if default in SEVERITY else ALLOW
        self.protected = protected
        self.shell = shell or ShellSettings()
        self._by_name: dict[tuple[str, str, str | None], tuple[Rule, ...]] = {}

    @classmethod
    def from_config(cls, config: dict[str, Any], protected: Protected) -> ApprovalPolicy:
        section = config.get("toolApproval") or {}
        shell = ShellSettings.from_section(section)
        rules = [Rule.from_config(raw, i) for i, raw in enumerate(section.get("rules") or [])]
        if section.get("preset", "standard") != "none" and shell.mode != OFF:
            rules += _preset(shell=shell.mode == DENYLIST)
        default = ALLOW if shell.mode == OFF else str(section.get("defaultDecision", ALLOW))
        return cls(rules, default, protected, shell)

    def decide(self, call: CallFacts) -> Decision:
        """The decision on `call`; its summary is what the owner reads in every prompt, so
        Unicode's direction controls in it are written as escapes (gsv_core/bidi.py)."""
        decision = self._decide(call)
        return replace(decision, summary=escape_bidi(decision.summary))

    def _decide(self, call: CallFacts) -> Decision:
        script = _shell_script(call)
        if script is not None:
            judged = _in_workdir(call, judge_line(script, self._line_context(call)))
            return _leaving_sandbox(call, judged)
        summary = _describe(call)
        if self._touches_secrets(call):
            return Decision(DENY, SECRETS, "gsv-protected", summary)
        for rule in self._named(call):
            if (
                not rule.programs
                and not rule.writes_outside_workspace
                and _args_match(rule, call, None)
            ):
                return Decision(rule.decision, rule.reason or f"rule {rule.id}", rule.id, summary)
        return Decision(self.default, "default decision", None, summary)

    def linked_secret(self, call: CallFacts, disk: Disk) -> tuple[str, str] | None:
        """For a shell line judged where it runs: a word that leads, on that machine's
        `disk`, through a symlink to a path touching gsv's secrets, and that path
        (`cat notes` with `notes -> ~/.config/gsv/secrets.toml`)."""
        script = _shell_script(call)
        if script is None:
            return None
        check = SecretCheck(self.protected, _cwd(call), disk)
        # mode off: only the protections (every mode's) are read
        context = LineContext(OFF, ALLOW, (), _no_rule, check, frozenset(), self.shell.max_bytes)
        return check.linked if judge_line(script, context).verdict == DENY else None

    def too_long(self, call: CallFacts) -> bool:
        """A shell line over `maxCommandBytes`: it asks without being read (cheap)."""
        script = _shell_script(call)
        return script is not None and len(script.encode("utf-8", "surrogatepass")) > (
            self.shell.max_bytes
        )

    def _line_context(self, call: CallFacts) -> LineContext:
        return LineContext(
            mode=self.shell.mode,
            default=self.default,
            allow_rules=self.shell.allow,
            rule=lambda command: self._command_rule(call, command),
            secrets=SecretCheck(self.protected, _cwd(call)),
            pids=self.protected.pids,
            max_bytes=self.shell.max_bytes,
            contained_write=self._latitude(call),
        )

    def _latitude(self, call: CallFacts) -> Callable[[str], bool] | None:
        """For a Bash call that would run in its node's sandbox: whether a path it writes
        stays in the workspace (the sandbox's latitude, docs/sandbox.md). Not for Process
        writes: the background command they feed may have been approved out of it."""
        if not (self.shell.sandbox_latitude and call.sandboxed and call.bare == "Bash"):
            return None
        if call.args.get("unsandboxed") is True:
            return None
        return lambda path: not _UNSURE_PATH.search(path) and not _outside(call, [path])

    def _command_rule(self, call: CallFacts, command: SimpleCommand) -> Decision | None:
        for rule in self._named(call):
            if _args_match(rule, call, command):
                reason = rule.reason or f"rule {rule.id}"
                # (only the owner's configured rules allow; the preset's ask)
                return Decision(rule.decision, reason, rule.id, granted=rule.decision == ALLOW)
        return None

    def _touches_secrets(self, call: CallFacts) -> bool:
        """A file tool naming a secret; Grep also searching a directory above one."""
        check = SecretCheck(self.protected, _cwd(call))
        # (a Glob or Grep `pattern` is a name pattern or a regex, not a path to read)
        named = _path_args(call, pattern=call.bare not in ("Glob", "Grep"))
        if any(check.touches(str(p)) for p in named):
            return True
        if call.bare == "Grep":
            path = call.args.get("path")
            return check.covers(path if isinstance(path, str) and path else ".")
        return False

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


# a redirection target bash would change first, or one under the home directory
_UNSURE_PATH = re.compile(r"^~|[$`*?\[{]")
UNSANDBOXED = "asks to run outside the node's sandbox (with network, writing beyond the workspace)"


def _leaving_sandbox(call: CallFacts, decision: Decision) -> Decision:
    """On a sandboxed node, a Bash call that asks runs outside the sandbox once approved
    (`leaves_sandbox`, for the prompt), and one asking for `unsandboxed` asks, unless the
    owner's own rules already grant it full access (or something refuses it)."""
    if call.bare != "Bash" or not call.sandboxed:
        return decision
    if decision.verdict == ALLOW and not decision.granted and call.args.get("unsandboxed") is True:
        decision = replace(decision, verdict=ASK, reason=UNSANDBOXED)
    return replace(decision, leaves_sandbox=decision.verdict == ASK)


def _in_workdir(call: CallFacts, decision: Decision) -> Decision:
    """A Bash call's line as the prompt shows it: where it runs first, when the call names
    a workdir (`rm -rf build` means another thing elsewhere, and the owner sees only the
    summary)."""
    workdir = call.args.get("workdir")
    if call.bare != "Bash" or not isinstance(workdir, str) or not workdir:
        return decision
    return replace(decision, summary=f"cd {shlex.quote(workdir)} && {decision.summary}")


def _no_rule(command: SimpleCommand) -> Decision | None:
    return None


def _cwd(call: CallFacts) -> str | None:
    """Where the call's relative paths start: its workdir, inside the node workspace."""
    workdir = call.args.get("workdir")
    base = call.workspace
    if isinstance(workdir, str) and workdir:
        if workdir.startswith(("/", "~")):
            return posixpath.normpath(os.path.expanduser(workdir))
        return posixpath.join(base, workdir) if base else None
    return base


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
    if call.tool.startswith(MCP_PREFIX) and call.args:  # only its server knows what matters
        return f"{call.bare} {json.dumps(call.args, ensure_ascii=False, default=str)}"
    if "path" in call.args:
        return f"{call.bare} {call.args['path']}"
    if call.tool.startswith("gsv__") and call.args:  # whom a message goes to, which job ...
        return f"{call.bare} {json.dumps(call.args, ensure_ascii=False, default=str)}"
    return call.bare


def _path_args(call: CallFacts, pattern: bool = True) -> list[Any]:
    keys = ("path", "pattern", "workdir") if pattern else ("path", "workdir")
    return [call.args[k] for k in keys if isinstance(call.args.get(k), str)]


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
    if rule.programs and (
        command is None or not any(_runs(command, p, rule.decision) for p in rule.programs)
    ):
        return False
    if rule.paths and not any(
        _under(str(p), prefix) for p in _path_args(call) for prefix in rule.paths
    ):
        return False
    if rule.path_pattern is not None and not _path_matches(rule.path_pattern, call):
        return False
    if rule.test is not None and not rule.test(call):
        return False
    if rule.outside_workspace and not _outside(call, _path_args(call)):
        return False
    return not rule.writes_outside_workspace or (
        command is not None and _outside(call, list(command.writes))
    )


def _runs(command: SimpleCommand, program: tuple[str, ...], decision: str) -> bool:
    """`rm` matches `rm -rf x`; `git push` matches `git push origin`; `find -delete`
    matches a find with -delete anywhere. An allow rule for an interpreter alone never
    matches inline code (`python3` does not allow `python3 -c`, see `always.covers`)."""
    argv = (command.program, *command.argv[1:])
    if decision == ALLOW:
        return always.covers(program, argv)
    if len(program) == 2 and program[1].startswith("-") and program[0] == "find":
        return argv[0] == "find" and program[1] in argv
    return argv[: len(program)] == program


def _condition(condition: dict[str, Any], args: dict[str, Any]) -> bool:
    """A rule's `when` condition: {path, op: equals|contains|startsWith|regex, value}."""
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


def _path_matches(pattern: re.Pattern[str], call: CallFacts) -> bool:
    """The call's `path` matches once `.`, `..` and doubled slashes are gone: the file
    system reads `.git/x/../config` as `.git/config`, and so must the pattern."""
    path = call.args.get("path")
    return isinstance(path, str) and bool(path) and pattern.search(_norm(path)) is not None


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
