"""The node's own check before it runs a tool: decisions are enforced where
the tool runs. Built-in protections (this node's processes, gsv's secret and config
files on this machine) always refuse. A call the default policy (allowlist mode) would
put before a human runs only with the gateway's approval binding for exactly these
arguments."""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import replace
from typing import Any

from gsv_core.approval.binding import verify
from gsv_core.approval.policy import ALLOW, DENY, ApprovalPolicy, CallFacts, Decision
from gsv_core.approval.protected import protected_files
from gsv_core.errors import ToolFailed
from gsv_core.paths import resolve_paths

log = logging.getLogger(__name__)
LINKED_FILE_TOOLS = frozenset({"Read", "Write", "Edit", "Grep"})
# Read-only file tools: their policy decision is a pure function of their (small)
# arguments, string checks against this node's fixed policy and secret paths, with no
# shell line and no file system, so it is kept per distinct call (the same Read comes
# back again and again). The symlink check looks at the file system: it runs every time.
# Write and Edit are left out: their content would be part of the key.
PURE_DECISION_TOOLS = frozenset({"Read", "Glob", "Grep"})
DECISIONS_KEPT = 1024


class NodeGuard:
    def __init__(self, node_id: str, workspace: str, key: str | None = None) -> None:
        self.node_id = node_id
        self.workspace = os.path.normpath(workspace)
        self.key = key  # from hello-ok; None: the gateway does not sign (older gateway)
        paths = resolve_paths()
        protected = protected_files(paths, paths.database, {os.getpid()})
        # the defaults: allowlist mode. The gateway's own mode and rules are its to
        # apply; whatever it approves arrives with a binding for exactly that call
        self.policy = ApprovalPolicy.from_config({}, protected)
        self._decided: dict[tuple[Any, ...], Decision] = {}  # for `self.policy`, fixed

    def check(self, tool: str, args: Any, binding: Any) -> None:
        """Raise ToolFailed unless this call may run here."""
        arguments = args if isinstance(args, dict) else {}
        facts = CallFacts(f"{self.node_id}__{tool}", tool, self.node_id, arguments, self.workspace)
        decision = self._decide(facts)
        if decision.verdict != DENY:
            decision = self._through_links(facts) or decision
        if decision.verdict == DENY:
            raise ToolFailed(f"refused on this node: {decision.reason}")
        if decision.verdict == ALLOW or self.key is None:
            return
        if not verify(self.key, tool, arguments, binding):
            log.warning("refused %s: no approval for exactly this call", tool)
            raise ToolFailed(
                f"refused on this node: {decision.reason} and the gateway's approval does not "
                "cover exactly this call"
            )

    def _decide(self, facts: CallFacts) -> Decision:
        key = _decision_key(facts)
        if key is None:
            return self.policy.decide(facts)
        decision = self._decided.get(key)
        if decision is None:
            if len(self._decided) >= DECISIONS_KEPT:  # arguments come from callers: bounded
                self._decided.clear()
            decision = self._decided[key] = self.policy.decide(facts)
        return decision

    def _through_links(self, facts: CallFacts) -> Decision | None:
        """The decision for where a file tool's path really leads, when a symlink on the
        way changes it (a link in the workspace to gsv's secret store)."""
        path = facts.args.get("path")
        if facts.bare not in LINKED_FILE_TOOLS or not isinstance(path, str) or not path:
            return None
        named = os.path.normpath(os.path.join(self.workspace, os.path.expanduser(path)))
        if not self._may_be_linked(named):
            return None
        real = os.path.realpath(named)
        if real == named:
            return None
        decided = self.policy.decide(replace(facts, args={**facts.args, "path": real}))
        return decided if decided.verdict == DENY else None

    def _may_be_linked(self, named: str) -> bool:
        """Whether following links could change `named`. A plain file right in the
        workspace is told by one lstat (the common Read); anything deeper is resolved,
        also when the file does not exist yet: a Write through a linked directory would
        create it wherever that directory leads."""
        try:
            if stat.S_ISLNK(os.lstat(named).st_mode):
                return True
        except OSError:
            pass  # not there yet (a Write): the directories on the way may still be links
        return os.path.dirname(named) != self.workspace


def _decision_key(facts: CallFacts) -> tuple[Any, ...] | None:
    """The cache key of a call whose decision depends on its arguments alone: the tool
    and its (flat, scalar) arguments; None when it must be decided every time."""
    if facts.bare not in PURE_DECISION_TOOLS:
        return None
    items: list[tuple[str, type, Any]] = []
    for name, value in facts.args.items():
        if not isinstance(value, str | int | float | bool | None):
            return None  # nested values: not worth a key
        items.append((name, type(value), value))  # 1 and True are not the same argument
    return (facts.bare, *sorted(items, key=lambda item: item[0]))
