"""`gsv__WebFetch`: a web page, JSON document or text file for the agent, through the
guard of gsv_core/webfetch (public addresses only, every redirect checked, size and time
capped). docs/tools.md#gateway-native-tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gsv_core.agent.tools import ToolCallContext
from gsv_core.config import setting
from gsv_core.gateway.native_registry import NativeArgs, NativeTool, NativeToolRegistry
from gsv_core.webfetch.convert import as_text
from gsv_core.webfetch.fetch import Request, fetch
from gsv_core.webfetch.guard import Resolver, parse_networks, system_resolver

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

MAX_BYTES_LIMIT = 10 * 1024 * 1024


class WebFetchArgs(NativeArgs):
    url: str = Field(max_length=8192, description="http or https URL to fetch.")
    method: Literal["GET", "POST"] = Field(default="GET", description="HTTP method.")
    headers: dict[str, str] | None = Field(
        default=None, description="Extra request headers (not Host, Content-Length, ...)."
    )
    body: str | None = Field(default=None, max_length=1_000_000, description="POST body.")
    format: Literal["markdown", "text", "raw"] = Field(
        default="markdown",
        description="HTML as markdown (default) or plain text; raw: the body as sent.",
    )
    maxBytes: int | None = Field(
        default=None, ge=1, le=MAX_BYTES_LIMIT,
        description="Read at most this many bytes (default webFetch.maxBytes).",
    )  # fmt: skip


DESCRIPTION = (
    "Fetch a web page or document over http(s) and return it as text: HTML as Markdown "
    "(or plain text), JSON pretty-printed. Only public internet addresses; redirects are "
    "followed (at most 5), the body is cut at maxBytes. Returns url (after redirects), "
    "status, contentType, content and truncated. Binary files are not returned."
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
        return {"url": fetched.url, "status": fetched.status,
                "contentType": fetched.content_type, "content": as_text(fetched, args.format),
                "truncated": fetched.truncated}  # fmt: skip

    registry.add(NativeTool("gsv__WebFetch", DESCRIPTION, WebFetchArgs, web_fetch))
