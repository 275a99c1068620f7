"""The node's own check before it runs a tool: decisions are enforced where
the tool runs. Built-in protections (this node's processes, gsv's secret and config
files on this machine) always refuse. A call the default policy (allowlist mode) would
put before a human runs only with the gateway's approval binding for exactly these
arguments."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any

from gsv_core.approval.binding import verify
from gsv_core.approval.policy import ALLOW, DENY, ApprovalPolicy, CallFacts, Decision
from gsv_core.approval.protected import protected_files
from gsv_core.errors import ToolFailed
from gsv_core.paths import resolve_paths

log = logging.getLogger(__name__)
LINKED_FILE_TOOLS = frozenset({"Read", "Write", "Edit", "Grep"})


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

    def check(self, tool: str, args: Any, binding: Any) -> None:
        """Raise ToolFailed unless this call may run here."""
        arguments = args if isinstance(args, dict) else {}
        facts = CallFacts(f"{self.node_id}__{tool}", tool, self.node_id, arguments, self.workspace)
        decision = self.policy.decide(facts)
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

    def _through_links(self, facts: CallFacts) -> Decision | None:
        """The decision for where a file tool's path really leads, when a symlink on the
        way changes it (a link in the workspace to gsv's secret store)."""
        path = facts.args.get("path")
        if facts.bare not in LINKED_FILE_TOOLS or not isinstance(path, str) or not path:
            return None
        # resolved also when the file does not exist yet: a Write through a linked
        # directory would create it wherever that directory leads
        named = os.path.normpath(os.path.join(self.workspace, os.path.expanduser(path)))
        real = os.path.realpath(named)
        if real == named:
            return None
        decided = self.policy.decide(replace(facts, args={**facts.args, "path": real}))
        return decided if decided.verdict == DENY else None
