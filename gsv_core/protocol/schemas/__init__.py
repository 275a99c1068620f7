"""Pydantic v2 models for method params and results, one module per method family.

Field names are the wire names of docs/protocol.md (camelCase). Params models ignore unknown
fields (peers may be newer than us); results leave out absent optional fields.
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import ConfigDict


class WireModel(BaseModel):
    """Base for wire payloads: wire names as-is, unknown input fields ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    def to_wire(self) -> dict[str, object]:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)
