"""`workspace.*` over the wire on a real gateway: wire shapes, the default agent,
smart reads, and 400/404 for bad input."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.gateway.server import RunningGateway


@pytest.fixture
async def client(gateway: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gateway.url, token=gateway.token) as connected:
        yield connected


def data_dir(gateway: RunningGateway) -> Path:
    return Path(gateway.gateway.db.path).parent


async def call(client: GatewayClient, method: str, **params: Any) -> Any:
    return await client.call(f"workspace.{method}", params)


async def test_write_read_list_delete_round_trip(
    gateway: RunningGateway, client: GatewayClient
) -> None:
    """Each method answers with its wire shape; the file lands under agents/main/."""
    wrote = await call(client, "write", path="memory/2025-01-31.md", content="tea ☕\n")
    assert wrote == {"path": "memory/2025-01-31.md", "size": 8, "written": True}
    on_disk = data_dir(gateway) / "workspace/agents/main/memory/2025-01-31.md"
    assert on_disk.read_text(encoding="utf-8") == "tea ☕\n"
    read = await call(client, "read", path="memory/2025-01-31.md")
    assert read["content"] == "tea ☕\n" and read["size"] == 8
    assert read["lastModified"].endswith("Z") and read["contentType"] == "text/markdown"
    listed = await call(client, "list", path="memory")
    assert listed == {"path": "memory", "files": ["memory/2025-01-31.md"], "directories": []}
    root = await call(client, "list")
    assert "SOUL.md" in root["files"] and "memory/" in root["directories"]
    assert await call(client, "delete", path="memory/2025-01-31.md") == {
        "path": "memory/2025-01-31.md",
        "deleted": True,
    }
    assert not on_disk.exists()


async def test_reading_a_folder_lists_it(client: GatewayClient) -> None:
    """workspace.read of a folder (or "/") returns a listing, not content."""
    listed = await call(client, "read", path="/")
    assert listed["path"] == "/" and "BOOTSTRAP.md" in listed["files"]
    assert "content" not in listed


async def test_agent_id_defaults_to_the_configured_default_agent(
    gateway: RunningGateway, client: GatewayClient
) -> None:
    """Without agentId the default agent of agents.list is used, else main."""
    await client.call(
        "config.set", {"path": "agents.list", "value": [{"id": "wren", "default": True}]}
    )
    await call(client, "write", path="who.md", content="wren")
    assert (data_dir(gateway) / "workspace/agents/wren/who.md").read_text() == "wren"
    await call(client, "write", path="who.md", content="helper", agentId="helper")
    assert (await call(client, "read", path="who.md", agentId="helper"))["content"] == "helper"


async def test_smart_reads_over_the_wire(client: GatewayClient) -> None:
    """startLine/endLine, search with contextLines and jsonPath work on workspace.read."""
    await call(client, "write", path="log.md", content="a\nb\nneedle\nc\n")
    lines = await call(client, "read", path="log.md", startLine=2, endLine=3)
    assert lines["content"] == "b\nneedle" and lines["totalLines"] == 4
    hits = await call(client, "read", path="log.md", search="NEEDLE", contextLines=1)
    assert hits["content"] == "2-b\n3:needle\n4-c" and hits["matches"] == 1
    await call(client, "write", path="d.json", content='{"a": [1, 2]}')
    assert (await call(client, "read", path="d.json", jsonPath="a[1]"))["content"] == "2"


async def test_skill_paths_report_where_they_resolved(
    gateway: RunningGateway, client: GatewayClient
) -> None:
    """A global skill reads with resolvedSource global; writing it makes the agent copy."""
    skill = data_dir(gateway) / "workspace/skills/weather/SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("# Weather")
    read = await call(client, "read", path="skills/weather/SKILL.md")
    assert (read["resolvedSource"], read["resolvedPath"]) == ("global", "skills/weather/SKILL.md")
    wrote = await call(client, "write", path="skills/weather/SKILL.md", content="# Mine")
    assert wrote["resolvedPath"] == "agents/main/skills/weather/SKILL.md"
    assert skill.read_text() == "# Weather"
    with pytest.raises(Forbidden, match="global skill"):
        await call(client, "delete", path="skills/weather/SKILL.md", agentId="other")


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("read", {"path": "../../etc/passwd"}, "path traversal ('..') is not allowed"),
        ("write", {"path": "/etc/x", "content": "x"}, "absolute paths are not allowed"),
        ("write", {"path": "a\\b", "content": "x"}, "backslashes are not allowed"),
        ("delete", {"path": "a\x00b"}, "params.path: text with a NUL character"),  # at the frame
        ("list", {"path": "x", "agentId": "../other"}, "invalid agentId '../other'"),
        ("read", {"path": "x.md", "agentId": "Main"}, "invalid agentId 'Main'"),
        ("write", {"path": "x.md"}, "content: Field required"),
        ("read", {}, "path: Field required"),
        ("write", {"path": "x.md", "content": 5}, "content: Input should be a valid string"),
        ("read", {"path": "SOUL.md", "startLine": 0}, "startLine: Input should be greater"),
        ("read", {"path": "SOUL.md", "contextLines": 99}, "contextLines: Input should be less"),
        ("read", {"path": "SOUL.md", "search": "a", "jsonPath": "b"}, "cannot be combined"),
        ("read", {"path": "SOUL.md", "jsonPath": "a"}, "SOUL.md is not valid JSON"),
        ("write", {"path": "/", "content": "x"}, "path must name a file"),
        ("list", {"path": "SOUL.md"}, "SOUL.md is a file, not a folder"),
    ],
)
async def test_bad_input_is_a_400_that_says_why(
    client: GatewayClient, method: str, params: dict[str, Any], message: str
) -> None:
    """Malformed params and refused paths come back as 400 with a clear message."""
    with pytest.raises(InvalidParams) as caught:
        await call(client, method, **params)
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("read", {"path": "ghost.md"}, "Not found: ghost.md"),
        ("list", {"path": "ghosts"}, "Not found: ghosts"),
        ("delete", {"path": "ghost.md"}, "File not found: ghost.md"),
        ("read", {"path": "skills/ghost/SKILL.md"}, "Not found: skills/ghost/SKILL.md"),
    ],
)
async def test_missing_files_are_404(
    client: GatewayClient, method: str, params: dict[str, Any], message: str
) -> None:
    """Missing files and folders are NotFound naming the path."""
    with pytest.raises(NotFound) as caught:
        await call(client, method, **params)
    assert caught.value.message == message


async def test_nothing_is_written_outside_the_workspace(
    gateway: RunningGateway, client: GatewayClient, tmp_path: Path
) -> None:
    """After a volley of escape attempts over the wire, no file exists outside it."""
    before = sorted(p for p in tmp_path.rglob("*") if "workspace" not in p.parts)
    for path in ("../x.md", "../../x.md", "/tmp/x.md", "..\\x.md", "a/../../x.md", "~/x.md"):
        with pytest.raises(InvalidParams):
            await call(client, "write", path=path, content="escaped")
    after = sorted(p for p in tmp_path.rglob("*") if "workspace" not in p.parts)
    assert [p for p in after if p not in before and not p.name.startswith("gsv.db")] == []
    assert not any(p.read_bytes() == b"escaped" for p in tmp_path.rglob("*") if p.is_file())
