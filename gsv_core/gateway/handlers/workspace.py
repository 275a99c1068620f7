"""`workspace.list/read/write/delete` (docs/protocol.md#methods): the agent workspace
over the wire. `agentId` defaults to the configured default agent and is validated (the
original used it unchecked in storage keys);
bad paths are 400s, missing files 404s. `workspace.read` also takes the smart-read
options of `gsv__ReadFile`: `startLine`/`endLine`, `search` with `contextLines`, and
`jsonPath`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol.methods import WORKSPACE_DELETE
from gsv_core.protocol.methods import WORKSPACE_LIST
from gsv_core.protocol.methods import WORKSPACE_READ
from gsv_core.protocol.methods import WORKSPACE_WRITE
from gsv_core.protocol.schemas import WireModel
from gsv_core.routing import RoutingSettings
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router
from gsv_core.workspace.excerpts import MAX_CONTEXT_LINES
from gsv_core.workspace.excerpts import ReadQuery

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class WorkspaceListParams(WireModel):
    path: str | None = None
    agentId: str | None = None


class WorkspaceReadParams(WireModel):
    path: str
    agentId: str | None = None
    startLine: int | None = Field(default=None, ge=1)
    endLine: int | None = Field(default=None, ge=1)
    search: str | None = Field(default=None, min_length=1)
    contextLines: int = Field(default=2, ge=0, le=MAX_CONTEXT_LINES)
    jsonPath: str | None = None

    def query(self) -> ReadQuery:
        return ReadQuery(
            self.startLine, self.endLine, self.search, self.contextLines, self.jsonPath
        )


class WorkspaceWriteParams(WireModel):
    path: str
    content: str
    agentId: str | None = None


class WorkspaceDeleteParams(WireModel):
    path: str
    agentId: str | None = None


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    def agent(requested: str | None) -> str:
        if requested is not None:
            return requested
        return RoutingSettings.from_config(gateway.config.effective).default_agent

    @route(WORKSPACE_LIST, WorkspaceListParams)
    async def workspace_list(ctx: RequestContext, params: WorkspaceListParams) -> dict[str, Any]:
        return await gateway.workspace.list(agent(params.agentId), params.path or "")

    @route(WORKSPACE_READ, WorkspaceReadParams)
    async def workspace_read(ctx: RequestContext, params: WorkspaceReadParams) -> dict[str, Any]:
        return await gateway.workspace.read(agent(params.agentId), params.path, params.query())

    @route(WORKSPACE_WRITE, WorkspaceWriteParams)
    async def workspace_write(ctx: RequestContext, params: WorkspaceWriteParams) -> dict[str, Any]:
        return await gateway.workspace.write(agent(params.agentId), params.path, params.content)

    @route(WORKSPACE_DELETE, WorkspaceDeleteParams)
    async def workspace_delete(
        ctx: RequestContext, params: WorkspaceDeleteParams
    ) -> dict[str, Any]:
        return await gateway.workspace.delete(agent(params.agentId), params.path)
