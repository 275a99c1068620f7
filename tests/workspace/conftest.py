"""Fixtures for workspace tests: a Workspace over a real directory in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.workspace import FilesystemBackend
from gsv_core.workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


@pytest.fixture
def workspace(root: Path) -> Workspace:
    return Workspace(FilesystemBackend(root))


def put(root: Path, key: str, text: str) -> Path:
    """Write a file straight into the workspace directory (test setup)."""
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# the agent tests' real gateway with a scripted model, for the tool and prompt tests
from tests.agent.conftest import client  # noqa: E402
from tests.agent.conftest import fake  # noqa: E402
from tests.agent.conftest import gw  # noqa: E402
from tests.agent.conftest import log  # noqa: E402

__all__ = ["client", "fake", "gw", "log", "put"]
