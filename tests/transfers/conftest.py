"""Transfer fixtures: a real gateway on port 0 and two real node daemons in tmp dirs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.transfers.nodes import node


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    async with serve(ServerConfig(database=tmp_path / "data" / "gsv.db"), port=0) as running:
        yield running


@pytest.fixture
async def pair(gw: RunningGateway, tmp_path: Path) -> AsyncIterator[tuple[Path, Path]]:
    async with node(gw.url, tmp_path / "a", "a"), node(gw.url, tmp_path / "b", "b"):
        yield tmp_path / "a", tmp_path / "b"
