"""An MCP `CallToolResult` as the tool result the agent loop stores: `{content: [...]}`
with text and image blocks (gsv_core/agent/tools.py). Audio, resources and structured
content become text the model can read."""

from __future__ import annotations

import json
from typing import Any

from gsv_core.errors import ToolFailed


def tool_result(result: Any) -> dict[str, Any]:
    """`result` is the SDK's CallToolResult; raises ToolFailed when the server says the
    call failed (its text is the message the model reads)."""
    blocks = [_block(item) for item in result.content]
    structured = result.structured_content
    if structured is not None and not any(b["type"] == "text" for b in blocks):
        blocks.append({"type": "text", "text": json.dumps(structured, ensure_ascii=False)})
    if result.is_error:
        text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        raise ToolFailed(text or "the MCP server reported an error without a message")
    return {"content": blocks or [{"type": "text", "text": "(no output)"}]}


def _block(item: Any) -> dict[str, Any]:
    kind = item.type
    if kind == "text":
        return {"type": "text", "text": item.text}
    if kind == "image":
        return {"type": "image", "data": item.data, "mimeType": item.mime_type}
    if kind == "audio":
        return {"type": "text", "text": f"[audio: {item.mime_type}, not shown]"}
    if kind == "resource":
        return _resource(item.resource)
    if kind == "resource_link":
        about = f": {item.description}" if item.description else ""
        return {"type": "text", "text": f"[resource link {item.name} <{item.uri}>{about}]"}
    return {"type": "text", "text": f"[{kind} content, not shown]"}


def _resource(resource: Any) -> dict[str, Any]:
    """An embedded resource: text inline, images as images, other binaries described."""
    mime = resource.mime_type or "application/octet-stream"
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return {"type": "text", "text": f"[resource {resource.uri} ({mime})]\n{text}"}
    if mime.startswith("image/"):
        return {"type": "image", "data": resource.blob, "mimeType": mime}
    return {"type": "text", "text": f"[resource {resource.uri} ({mime}), binary, not shown]"}
