"""`toolApproval` read for the parts outside the policy: how weak the mode is (for
`gsv security audit`) and how long an approval waits for its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gsv_core.approval.lines import ALLOWLIST
from gsv_core.approval.lines import DENYLIST
from gsv_core.approval.lines import MODES
from gsv_core.approval.lines import OFF

DEFAULT_TIMEOUT_S = 300.0
WEAKNESS = {
    DENYLIST: "denylist mode runs every shell command that is not on a list of dangerous "
    "programs; a command built to avoid the list runs without asking",
    OFF: "approvals are off: every shell command runs without asking",
}


@dataclass(frozen=True)
class ModeReport:
    mode: str
    weak: bool  # denylist or off
    flagged: bool  # weak while nodes are connected: a finding for the audit
    detail: str


def approval_mode(config: dict[str, Any]) -> str:
    """The effective `toolApproval.mode` (allowlist when unset or unreadable)."""
    mode = (config.get("toolApproval") or {}).get("mode", ALLOWLIST)
    return mode if mode in MODES else ALLOWLIST


def mode_report(config: dict[str, Any], nodes_connected: int = 0) -> ModeReport:
    """The approval mode for `gsv security audit`: weak modes are flagged when a node is
    connected (then shell commands really run somewhere)."""
    mode = approval_mode(config)
    weak = mode in (DENYLIST, OFF)
    detail = WEAKNESS.get(mode, "allowlist mode: only known read-only commands run unasked")
    return ModeReport(mode, weak, weak and nodes_connected > 0, detail)


def approval_timeout(config: dict[str, Any]) -> float:
    """Seconds an approval waits: `timeoutMs` when set, else `timeoutSeconds`."""
    section = config.get("toolApproval") or {}
    millis = section.get("timeoutMs")
    if isinstance(millis, int) and millis > 0:
        return millis / 1000
    seconds = section.get("timeoutSeconds", DEFAULT_TIMEOUT_S)
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else DEFAULT_TIMEOUT_S
