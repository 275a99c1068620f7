"""Cron methods (docs/protocol.md#methods): status, list, add, update, remove, run, runs.

`cron.add` / `cron.update` take canonical schedules (the `gsv__Cron` tool accepts the
friendlier forms); every bad field is a 400 naming it, an unknown id a 404. `cron.run`
waits for the runs it starts and reports their real outcomes. Each run result and history
entry also carries the `sessionKey` the run happened in (a gsv addition: a task's fresh
session is otherwise hard to find).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from pydantic import Field

from gsv_core.gateway.handlers.routes import Routes
from gsv_core.protocol import methods as m
from gsv_core.protocol.schemas import WireModel
from gsv_core.rpc.context import RequestContext
from gsv_core.rpc.dispatch import Router

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway


class CronListParams(WireModel):
    agentId: str | None = None
    includeDisabled: bool = True
    limit: int = Field(default=200, ge=1, le=500)
    offset: int = Field(default=0, ge=0)


class CronJobCreateParams(WireModel):
    """CronJobCreate: the outer types here; schedule and spec are checked by
    gsv_core.cron (the messages name the field)."""

    agentId: str | None = None
    name: str
    description: str | None = None
    enabled: bool | None = None
    deleteAfterRun: bool | None = None
    schedule: dict[str, Any]
    spec: dict[str, Any]


class CronUpdateParams(WireModel):
    id: str = Field(min_length=1)
    patch: dict[str, Any]


class CronIdParams(WireModel):
    id: str = Field(min_length=1)


class CronRunParams(WireModel):
    id: str | None = Field(default=None, min_length=1)
    mode: Literal["due", "force"] = "due"


class CronRunsParams(WireModel):
    jobId: str | None = Field(default=None, min_length=1)
    limit: int = Field(default=200, ge=1, le=2000)
    offset: int = Field(default=0, ge=0)


def register(router: Router, gateway: Gateway) -> None:
    route = Routes(router)

    @route(m.CRON_STATUS)
    async def cron_status(ctx: RequestContext, params: object) -> dict[str, Any]:
        return gateway.cron.status()

    @route(m.CRON_LIST, CronListParams)
    async def cron_list(ctx: RequestContext, params: CronListParams) -> dict[str, Any]:
        jobs = gateway.cron.jobs(params.agentId, params.includeDisabled)
        page = jobs[params.offset : params.offset + params.limit]
        return {"jobs": [job.to_wire() for job in page], "count": len(jobs)}

    @route(m.CRON_ADD, CronJobCreateParams)
    async def cron_add(ctx: RequestContext, params: CronJobCreateParams) -> dict[str, Any]:
        job = await gateway.cron.add(params.model_dump(exclude_none=True))
        return {"ok": True, "job": job.to_wire()}

    @route(m.CRON_UPDATE, CronUpdateParams)
    async def cron_update(ctx: RequestContext, params: CronUpdateParams) -> dict[str, Any]:
        job = await gateway.cron.update(params.id, params.patch)
        return {"ok": True, "job": job.to_wire()}

    @route(m.CRON_REMOVE, CronIdParams)
    async def cron_remove(ctx: RequestContext, params: CronIdParams) -> dict[str, Any]:
        return {"ok": True, "removed": await gateway.cron.remove(params.id)}

    @route(m.CRON_RUN, CronRunParams)
    async def cron_run(ctx: RequestContext, params: CronRunParams) -> dict[str, Any]:
        results = await gateway.cron.run(params.id, params.mode)
        ran = sum(1 for r in results if r["status"] != "skipped")
        return {"ok": True, "ran": ran, "results": results}

    @route(m.CRON_RUNS, CronRunsParams)
    async def cron_runs(ctx: RequestContext, params: CronRunsParams) -> dict[str, Any]:
        runs, total = await gateway.cron.runs(params.jobId, params.offset, params.limit)
        return {"runs": runs, "count": total}
