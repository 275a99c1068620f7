"""`gsv__WebFetch`: a web page, JSON document or text file for the agent, through the
guard of gsv_core/webfetch (public addresses only, every redirect checked, size and time
capped). docs/tools.md#gateway-native-tools."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.config import setting
from gsv_core.errors import ToolFailed
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.webfetch.convert import as_text
from gsv_core.webfetch.fetch import Fetched
from gsv_core.webfetch.fetch import Request
from gsv_core.webfetch.fetch import fetch
from gsv_core.webfetch.guard import Resolver
from gsv_core.webfetch.guard import parse_networks
from gsv_core.webfetch.guard import system_resolver

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

MAX_BYTES_LIMIT = 10 * 1024 * 1024


class WebFetchArgs(NativeArgs):
    url: str = Field(max_length=8192)
    method: Literal["GET", "POST"] = "GET"
    headers: dict[str, str] | None = None
    body: str | None = Field(default=None, max_length=1_000_000)
    format: Literal["markdown", "text", "raw"] = Field(
        default="markdown", description="How HTML comes back; raw: the body as sent."
    )
    maxBytes: int | None = Field(
        default=None, ge=1, le=MAX_BYTES_LIMIT, description="Default: webFetch.maxBytes."
    )
    saveTo: str | None = Field(
        default=None, min_length=1, max_length=1024,
        description="A workspace path to save the body to (any type) instead of returning it.",
    )  # fmt: skip


DESCRIPTION = (
    "Fetch a web page or document over http(s) as text: HTML as Markdown, JSON "
    "pretty-printed; binary files only with saveTo. Public addresses only; at most 5 "
    "redirects; the body is cut at maxBytes."
)


def register(
    registry: NativeToolRegistry, gateway: Gateway, resolver: Resolver = system_resolver
) -> None:
    async def web_fetch(args: WebFetchArgs, ctx: ToolCallContext) -> dict[str, Any]:
        config = gateway.config.effective
        allow = parse_networks(setting(config, "webFetch.allowPrivate"))
        max_bytes = args.maxBytes or int(setting(config, "webFetch.maxBytes"))
        timeout = int(setting(config, "webFetch.timeoutMs")) / 1000
        request = Request(args.url, args.method, args.headers, args.body)
        fetched = await fetch(request, resolver, allow, max_bytes, timeout)
        head = {"url": fetched.url, "status": fetched.status, "contentType": fetched.content_type}
        if args.saveTo is not None:
            return {**head, **await _save(fetched, args.saveTo, ctx.agent_id, max_bytes)}
        return {**head, "content": as_text(fetched, args.format), "truncated": fetched.truncated}

    async def _save(fetched: Fetched, path: str, agent_id: str, max_bytes: int) -> dict[str, Any]:
        if fetched.truncated:  # a cut file is no file: say how to get it whole
            raise ToolFailed(f"{fetched.url} is larger than maxBytes ({max_bytes}): not saved; "
                             f"pass a larger maxBytes (at most {MAX_BYTES_LIMIT})")  # fmt: skip
        saved = await gateway.workspace.write_bytes(agent_id, path, fetched.body)
        return {"savedTo": saved, "bytes": len(fetched.body)}

    registry.add(NativeTool("gsv__WebFetch", DESCRIPTION, WebFetchArgs, web_fetch))
