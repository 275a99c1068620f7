"""`security.audit` (gsv addition): findings of the gateway's security audit."""

from __future__ import annotations

from gsv_core.protocol.schemas import WireModel


class SecurityAuditParams(WireModel):
    fix: bool = False


class FindingInfo(WireModel):
    check: str
    message: str
    fix: str
    fixable: bool


class SecurityAuditResult(WireModel):
    findings: list[FindingInfo]  # what is still wrong (after fixing, with fix: true)
    fixed: list[FindingInfo]
    # toolApproval.mode and what it means, reported whether or not it is a finding
    approvalMode: str
    approvalDetail: str
    # only when --fix made a new owner token: the owner's CLI keeps it (never printed)
    token: str | None = None
