"""`mcp.servers.<name>`: the MCP servers whose tools the agent is offered (docs/mcp.md).

A server is either a local program spoken to over stdio (`command`, `args`, `env`, `cwd`)
or a streamable HTTP endpoint (`url`, `headers`). Credentials in `env` and `headers` are
secrets (`looks_mcp_secret`): they live in the secret store. Every `env` and `headers`
value reads as "***" (`is_mcp_opaque`): credentials hide there under any name; in `args`
what carries one does (`mask_args`), so the rest (a served directory) stays readable.
"""

from __future__ import annotations

import re
from typing import Annotated
from typing import Any
from urllib.parse import urlsplit

from pydantic import AfterValidator
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from gsv_core.protocol.schemas.mcp import check_server_name
from gsv_core.secret_names import looks_secret
from gsv_core.secret_names import mask_url_credentials

# env variables that carry credentials: GITHUB_TOKEN, STRIPE_KEY, DB_PASSWORD ...
_CREDENTIAL_ENV = re.compile(r"(key|token|secret|password|passwd|pwd|credentials?|auth)$", re.I)
_CREDENTIAL_HEADERS = {"authorization", "proxy-authorization", "cookie", "x-api-key"}


def looks_mcp_secret(name: str, parent: str | None) -> bool:
    """Whether an `env` variable or an HTTP header holds a credential."""
    if parent == "env":
        return bool(_CREDENTIAL_ENV.search(name)) or looks_secret(name)
    if parent == "headers":
        return name.lower() in _CREDENTIAL_HEADERS or looks_secret(name)
    return False


# an MCP server's parts that hold credentials under any name: a `DATABASE_URL` or a
# `GITHUB_PAT` in `env`, a custom header
MASKED_WHOLESALE = frozenset({"env", "headers"})


def is_mcp_opaque(path: tuple[str, ...]) -> bool:
    """Whether the value at `path` (config keys from the root) is an item of an MCP
    server's `env` or `headers`: read as "***", whatever its name."""
    return len(path) >= 5 and path[:2] == ("mcp", "servers") and path[3] in MASKED_WHOLESALE


def is_mcp_args(path: tuple[str, ...]) -> bool:
    """Whether `path` is an MCP server's `args` list."""
    return len(path) == 4 and path[:2] == ("mcp", "servers") and path[3] == "args"


def mask_args(args: list[Any], mask: str = "***") -> list[Any]:
    """`args` with what carries a credential masked: the value of a secret-named option
    (`--api-key X`, `--token=X`), the value of `NAME=X` with a secret-looking name, and a
    URL's user part and query (`postgresql://***@db/prod`)."""
    masked: list[Any] = []
    for index, arg in enumerate(args):
        before = args[index - 1] if index else None
        if isinstance(arg, str):
            name, equals, _ = arg.partition("=")
            if equals and looks_secret(name.lstrip("-")):
                arg = f"{name}={mask}"
            elif isinstance(before, str) and _secret_option(before):
                arg = mask
            elif _HEADER.match(arg):  # `-H "Authorization: Bearer X"` (mcp-remote)
                arg = _HEADER.sub(lambda m: f"{m.group(1)}{mask}", arg)
            else:
                arg = mask_url_credentials(arg, mask)
        masked.append(arg)
    return masked


# a header given as one word, whose value is a credential: `Authorization: Bearer X`,
# `X-Api-Key: X`; or a bare `Bearer X`
_HEADER = re.compile(
    r"(?i)^((?:authorization|proxy-authorization|[\w-]*(?:token|key|secret)[\w-]*)\s*:\s*"
    r"|(?:bearer|basic)\s+).+"
)


def _secret_option(word: str) -> bool:
    return word.startswith("-") and "=" not in word and looks_secret(word.lstrip("-"))


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"an MCP server URL must be http:// or https:// with a host, not {value!r}"
        )
    return value


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: Annotated[str, AfterValidator(_http_url)] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    # one tool call's deadline
    timeoutMs: int = Field(default=60_000, ge=100, le=3_600_000)
    # starting the server, its handshake and its tool list: apart from timeoutMs, because a
    # first start (`npx` fetching a package, a cold Python import) takes longer than a call
    startTimeoutMs: int = Field(default=60_000, ge=100, le=3_600_000)
    # tool names as the server spells them; unset: all, then denyTools removes some
    allowTools: list[str] | None = None
    denyTools: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if self.command is None and self.url is None:
            raise ValueError("an MCP server needs a command (stdio) or a url (streamable HTTP)")
        if self.command is not None and self.url is not None:
            raise ValueError("an MCP server has a command or a url, not both")
        if self.command is not None and self.headers:
            raise ValueError("headers are for url servers")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd are for command servers")
        return self


ServerName = Annotated[str, AfterValidator(check_server_name)]


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    servers: dict[ServerName, McpServerConfig] = Field(default_factory=dict)
