"""`models.list` (gsv addition): the models a configured provider offers."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from gsv_core.protocol.schemas import WireModel


class ModelsListParams(WireModel):
    # a provider name (builtin or providers.<name>); None: the configured model.provider
    provider: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None


class ModelsListResult(WireModel):
    provider: str
    models: list[str]
    count: int
    current: str | None = None  # model.id, when `provider` is the configured one


class ModelsTestParams(WireModel):
    provider: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None
    model: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None


class ModelsTestResult(WireModel):
    provider: str
    model: str
    reply: str
    ms: int
