"""Shared fixtures: an isolated GSV_HOME per test, an in-memory keyring, a real gateway,
a process holding a provider key in its environment."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from tests.fakes.memory_keyring import MemoryKeyring

PROVIDER_KEY = "sk-ant-CANARYKEY"  # held by `key_holder`


@pytest.fixture(autouse=True)
def gsv_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own GSV_HOME and XDG dirs; the real home is never touched."""
    home = tmp_path / "gsv-home"
    home.mkdir()
    monkeypatch.setenv("GSV_HOME", str(home))
    for var, sub in (
        ("XDG_CONFIG_HOME", "xdg-config"),
        ("XDG_DATA_HOME", "xdg-data"),
        ("XDG_STATE_HOME", "xdg-state"),
        ("XDG_CACHE_HOME", "xdg-cache"),
        ("HOME", "home"),
    ):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    for var in ("GSV_URL", "GSV_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    # subprocesses cannot see the in-memory backend: they use the 0600 file fallback
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return home


@pytest.fixture
def key_holder() -> Iterator[int]:
    """The pid of a live child whose environment holds ANTHROPIC_API_KEY=PROVIDER_KEY, as
    a gateway's may."""
    # first in the environment, where a listing cut to the screen's width still shows it
    env = {"ANTHROPIC_API_KEY": PROVIDER_KEY, **os.environ}
    env["ANTHROPIC_API_KEY"] = PROVIDER_KEY
    child = subprocess.Popen(["sleep", "300"], env=env)
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[object]:
    """A real gateway on 127.0.0.1 with an ephemeral port and its own SQLite file."""
    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve

    async with serve(ServerConfig(database=tmp_path / "gw" / "gsv.db"), port=0) as running:
        yield running
