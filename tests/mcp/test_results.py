"""MCP results as the agent's tool results, built from the SDK's own result types."""

from __future__ import annotations

import pytest
from mcp.types import AudioContent
from mcp.types import BlobResourceContents
from mcp.types import CallToolResult
from mcp.types import EmbeddedResource
from mcp.types import ImageContent
from mcp.types import ResourceLink
from mcp.types import TextContent

from gsv_core.errors import ToolFailed
from gsv_core.mcp.results import tool_result


def test_text_and_images_are_kept_as_blocks() -> None:
    result = CallToolResult(content=[TextContent(type="text", text="a"),
                                     ImageContent(type="image", data="AAAA", mime_type="image/png")])  # fmt: skip
    assert tool_result(result) == {"content": [
        {"type": "text", "text": "a"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ]}  # fmt: skip


def test_structured_content_is_json_text_when_no_text_came_with_it() -> None:
    alone = CallToolResult(content=[], structured_content={"celsius": 21.5})
    assert tool_result(alone) == {"content": [{"type": "text", "text": '{"celsius": 21.5}'}]}
    with_text = CallToolResult(content=[TextContent(type="text", text="21.5 C")],
                               structured_content={"celsius": 21.5})  # fmt: skip
    assert tool_result(with_text) == {"content": [{"type": "text", "text": "21.5 C"}]}


def test_resources_links_and_audio_are_described() -> None:
    blob = BlobResourceContents(uri="file:///a.bin", mime_type="application/zip", blob="UEs=")
    image = BlobResourceContents(uri="file:///a.png", mime_type="image/png", blob="iVBO")
    result = CallToolResult(content=[
        EmbeddedResource(type="resource", resource=blob),
        EmbeddedResource(type="resource", resource=image),
        ResourceLink(type="resource_link", name="notes", uri="file:///notes.md", description="My notes"),
        AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
    ])  # fmt: skip
    assert tool_result(result)["content"] == [
        {"type": "text", "text": "[resource file:///a.bin (application/zip), binary, not shown]"},
        {"type": "image", "data": "iVBO", "mimeType": "image/png"},
        {"type": "text", "text": "[resource link notes <file:///notes.md>: My notes]"},
        {"type": "text", "text": "[audio: audio/wav, not shown]"},
    ]


def test_an_empty_result_says_so() -> None:
    assert tool_result(CallToolResult(content=[])) == {
        "content": [{"type": "text", "text": "(no output)"}]
    }


def test_an_error_result_fails_the_call_with_the_servers_text() -> None:
    with pytest.raises(ToolFailed, match=r"^city not found$"):
        tool_result(
            CallToolResult(content=[TextContent(type="text", text="city not found")], is_error=True)
        )
    with pytest.raises(ToolFailed, match="without a message"):
        tool_result(CallToolResult(content=[], is_error=True))
