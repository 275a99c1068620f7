"""Skills test helpers: SKILL.md texts written into a workspace, and a real node daemon
connected to a real gateway."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gsv_core.client import Backoff
from gsv_core.gateway.server import RunningGateway
from gsv_core.node.daemon import NodeDaemon
from gsv_core.node.daemon import NodeSettings
from tests.waiting import until


def skill_text(name: str | None = None, description: str = "does things", **fields: Any) -> str:
    """A SKILL.md with YAML frontmatter built from keyword fields (lists as flow lists)."""
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    lines.append(f"description: {description}")
    for key, value in fields.items():
        if isinstance(value, list):
            value = "[" + ", ".join(value) + "]"
        elif isinstance(value, bool):
            value = "true" if value else "false"
        lines.append(f"{key}: {value}")
    lines += ["---", f"# {name or 'skill'}", "", "Step one. Step two.", ""]
    return "\n".join(lines)


def write_skill(root: Path, key: str, text: str, agent: str | None = None) -> Path:
    """Write `skills/{key}/SKILL.md` (global, or the agent's own copy) under a workspace
    directory; returns the file."""
    base = root / "agents" / agent / "skills" if agent else root / "skills"
    path = base / key / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def workspace_dir(gw: RunningGateway) -> Path:
    """The gateway's workspace directory (its filesystem backend's root)."""
    return Path(getattr(gw.gateway.workspace.backend, "root"))  # noqa: B009


@asynccontextmanager
async def running_node(
    gw: RunningGateway, workspace: Path, node_id: str = "n1"
) -> AsyncIterator[NodeDaemon]:
    """A real node daemon connected to `gw`, online when the block starts."""
    settings = NodeSettings(url=gw.url, node_id=node_id, workspace=workspace,
                            backoff=Backoff(base=0.05, cap=0.2), owner_token=gw.token)  # fmt: skip
    daemon = NodeDaemon(settings)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        await until(lambda: node_id in gw.gateway.nodes.online_ids(), f"node {node_id} online")
        yield daemon
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
