"""`memory.search`, `memory.reindex`, `memory.status` (gsv additions, docs/memory.md).

`memory.search` answers `{results: [...], count}` as gsv__MemorySearch does (docs/tools.md);
the owner's search sees every note and every session. `since` / `until` are ISO dates or
date-times (UTC unless an offset is given) or ages such as `7d`; the gateway checks them
and the query (a 400 saying what is wrong)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel


class MemorySearchParams(WireModel):
    query: str = Field(min_length=1, max_length=1000)
    scope: Literal["notes", "sessions", "all"] = "all"
    since: str | None = Field(default=None, max_length=64)
    until: str | None = Field(default=None, max_length=64)
    limit: int = Field(default=10, ge=1, le=50)
