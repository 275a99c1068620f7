"""`usage.get` (gsv addition): the usage ledger summed by source, session, model, day or
agent. The result is `{since, until, groupBy, groups: [{name, calls, input, output,
cacheRead, cacheWrite, costUsd, unpricedCalls}], count, total}`; `costUsd` is null for a
group whose calls all had no known price (a dict, so that null is sent, not dropped)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic import model_validator

from gsv_core.protocol.schemas import WireModel

GroupBy = Literal["source", "session", "model", "day", "agent"]


class UsageGetParams(WireModel):
    # epoch milliseconds; since defaults to 7 days before until, until to now
    since: int | None = Field(default=None, ge=0)
    until: int | None = Field(default=None, ge=0)
    groupBy: GroupBy = "source"

    @model_validator(mode="after")
    def _ordered(self) -> UsageGetParams:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        return self
