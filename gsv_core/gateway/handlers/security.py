"""`security.audit`: the gateway's findings, and with `fix` the repairs it can make."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.approval.modes import mode_report
from gsv_core.gateway import audit
from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas.security import FindingInfo
from gsv_core.protocol.schemas.security import SecurityAuditParams
from gsv_core.protocol.schemas.security import SecurityAuditResult
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.SECURITY_AUDIT, SecurityAuditParams)
    async def security_audit(
        ctx: RequestContext, params: SecurityAuditParams
    ) -> SecurityAuditResult:
        findings = await audit.audit(gateway)
        fixed: list[audit.Finding] = []
        if params.fix:
            fixed = await audit.fix_findings(gateway, findings)
            findings = await audit.audit(gateway)
        rotated = any(f.check == "token" for f in fixed)
        report = mode_report(gateway.config.effective, len(gateway.nodes.online_ids()))
        return SecurityAuditResult(
            approvalMode=report.mode,
            approvalDetail=report.detail,
            findings=[_info(f) for f in findings],
            fixed=[_info(f) for f in fixed],
            token=gateway.config.auth_token if rotated else None,
        )


def _info(finding: audit.Finding) -> FindingInfo:
    return FindingInfo(
        check=finding.check, message=finding.message, fix=finding.fix, fixable=finding.fixable
    )
