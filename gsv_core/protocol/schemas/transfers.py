"""`transfer.*` params (docs/protocol.md#methods) and `transfer.request` (gsv addition)."""

from __future__ import annotations

from pydantic import Field

from gsv_core.protocol.schemas import WireModel


class TransferStepParams(WireModel):
    transferId: int = Field(ge=0, le=2**32 - 1)
    error: str | None = None


class TransferMetaParams(TransferStepParams):
    size: int = Field(default=0, ge=0)
    mime: str | None = None


class TransferCompleteParams(TransferStepParams):
    sha256: str | None = None


class TransferDoneParams(TransferStepParams):
    bytesWritten: int = Field(default=0, ge=0)
    sha256: str | None = None


class TransferRequestParams(WireModel):
    source: str = Field(min_length=3, max_length=4096)
    destination: str = Field(min_length=3, max_length=4096)
    agentId: str | None = None
