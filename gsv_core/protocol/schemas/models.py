"""`models.list` (gsv addition): the models a configured provider offers."""

from __future__ import annotations

from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import Field
from pydantic import StringConstraints

from gsv_core.protocol.schemas import WireModel


class ModelsListParams(WireModel):
    # a provider name (builtin or providers.<name>); None: the configured model.provider
    provider: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    # gsv addition: config writes (path -> value) to try with, not saved: setup tries a
    # provider before it keeps it, so a failed try leaves a working setup as it was
    settings: dict[str, Any] | None = Field(default=None, max_length=16)


class ModelsListResult(WireModel):
    provider: str
    models: list[str]
    count: int
    current: str | None = None  # model.id, when `provider` is the configured one


class ModelsTestParams(WireModel):
    provider: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    model: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    settings: dict[str, Any] | None = Field(default=None, max_length=16)  # as models.list


class ModelsTestResult(WireModel):
    provider: str
    model: str
    reply: str
    ms: int
    # how the model calls tools when offered one (docs/models.md#tool-calls)
    toolCalls: Literal["native", "text", "none"]
    contextWindow: int  # tokens, as compaction counts them
    contextWindowReported: int | None = None  # what the server said (Ollama's /api/show)
