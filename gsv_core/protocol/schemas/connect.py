"""`connect` params and the `hello-ok` result (docs/protocol.md#connect)."""

from __future__ import annotations

from typing import Any
from typing import Literal

from pydantic import Field
from pydantic import field_validator

from gsv_core.protocol.schemas import WireModel

# What a peer that leaves out `client.version` / `client.platform` is recorded as (the
# original never required them).
UNKNOWN = "unknown"


class ClientInfo(WireModel):
    id: str = Field(min_length=1, max_length=256)
    version: str = UNKNOWN
    platform: str = UNKNOWN
    mode: str
    channel: str | None = None
    accountId: str | None = None


def object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as the original sends it: an object schema always lists
    `required` (empty when nothing is), and an empty schema is an object with no fields."""
    if schema.get("type", "object") != "object":
        return schema
    return {"type": "object", "properties": {}, **schema, "required": schema.get("required", [])}


class ToolDefinition(WireModel):
    name: str = Field(min_length=1, max_length=128)
    description: str = ""
    inputSchema: dict[str, Any] = Field(default_factory=dict)

    @field_validator("inputSchema")
    @classmethod
    def _with_required(cls, schema: dict[str, Any]) -> dict[str, Any]:
        return object_schema(schema)


class ConnectAuth(WireModel):
    token: str | None = Field(default=None, max_length=4096)
    # gsv addition (nodes and channel adapters): a one-time code from `auth.invite`,
    # exchanged for the peer's own credential (returned once in hello-ok `credential`)
    joinCode: str | None = Field(default=None, max_length=64)


class ConnectParams(WireModel):
    minProtocol: int
    # the original ignores it: a client that sends only `minProtocol: 1` is served
    maxProtocol: int | None = None
    client: ClientInfo
    tools: list[ToolDefinition] | None = None
    nodeRuntime: dict[str, Any] | None = None
    auth: ConnectAuth | None = None


class ServerInfo(WireModel):
    version: str
    connectionId: str


class Features(WireModel):
    methods: list[str]
    events: list[str]


class ConnectResult(WireModel):
    type: Literal["hello-ok"] = "hello-ok"
    protocol: int
    server: ServerInfo
    features: Features
    # gsv addition, node connections only: the key approval bindings are signed with
    approvalKey: str | None = None
    # gsv addition, only after a join code: the credential to connect with from now on
    credential: str | None = None
