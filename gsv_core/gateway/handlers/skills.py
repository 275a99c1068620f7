"""`skills.status` and `skills.update` (docs/protocol.md#methods): which skills an agent can use
on which connected node, and why not; `update` probes the nodes for binaries first.
`agentId` defaults to the configured default agent and is validated (400 otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol.methods import SKILLS_STATUS
from gsv_core.protocol.methods import SKILLS_UPDATE
from gsv_core.protocol.schemas.skills import SkillsStatusParams
from gsv_core.protocol.schemas.skills import SkillsStatusResult
from gsv_core.protocol.schemas.skills import SkillsUpdateParams
from gsv_core.protocol.schemas.skills import SkillsUpdateResult
from gsv_core.routing import RoutingSettings
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.workspace.paths import validate_agent_id

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    def agent(requested: str | None) -> str:
        if requested is None:
            return RoutingSettings.from_config(gateway.config.effective).default_agent
        return validate_agent_id(requested.strip().lower())

    @route(SKILLS_STATUS, SkillsStatusParams)
    async def skills_status(ctx: RequestContext, params: SkillsStatusParams) -> SkillsStatusResult:
        return await gateway.skills.status(agent(params.agentId))

    @route(SKILLS_UPDATE, SkillsUpdateParams)
    async def skills_update(ctx: RequestContext, params: SkillsUpdateParams) -> SkillsUpdateResult:
        timeout = params.timeoutMs / 1000
        return await gateway.skills.update(agent(params.agentId), params.force, timeout)
