"""`config.get` / `config.set` params and results (docs/protocol.md#methods)."""

from __future__ import annotations

from typing import Any
from typing import Literal

from pydantic import Field

from gsv_core.protocol.schemas import WireModel

# Dotted path: segments of letters, digits, `_` and `-` (map keys such as identity names
# may also carry `+`, `@` and `:`), no empty segment.
CONFIG_PATH_PATTERN = r"^[A-Za-z0-9_+@:-]+(\.[A-Za-z0-9_+@:-]+)*$"


class ConfigGetParams(WireModel):
    path: str | None = Field(default=None, pattern=CONFIG_PATH_PATTERN)


class ConfigSetParams(WireModel):
    path: str = Field(pattern=CONFIG_PATH_PATTERN)
    # required but may be null: null restores the default
    value: Any = Field(...)


class ConfigSetResult(WireModel):
    ok: Literal[True] = True
    path: str
