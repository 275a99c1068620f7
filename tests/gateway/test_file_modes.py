"""File modes under GSV_HOME: owner-only after a gateway start and CLI writes, wider modes
tightened at start with one log line, and another OS user locked out."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest
from typer.testing import CliRunner

from gsv_cli.logsetup import configure_logging
from gsv_cli.main import app
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.paths import resolve_paths
from gsv_core.service import background


def modes_under(root: Path) -> dict[str, int]:
    """{relative path: permission bits} of `root` and everything below it."""
    paths = [root, *root.rglob("*")]
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in paths}


def not_owner_only(root: Path) -> dict[str, int]:
    wanted = {True: 0o700, False: 0o600}
    return {
        name: bits
        for name, bits in modes_under(root).items()
        if bits != wanted[(root / name).is_dir()]
    }


@pytest.fixture
def file_logging() -> Iterator[Path]:
    """The gateway's rotating log file under GSV_HOME, as `gsv gateway run` sets it up."""
    path = resolve_paths().log_file("gateway")
    configure_logging(path, stderr=False, max_bytes=400, backups=2)
    yield path
    configure_logging(None, stderr=False)


async def populate(log_file: Path) -> None:
    """What a CLI user and a running gateway write under GSV_HOME."""
    runner = CliRunner()
    assert runner.invoke(app, ["local-config", "set", "node.id", "laptop"]).exit_code == 0
    assert runner.invoke(app, ["local-config", "set", "gateway.token", "t0k"]).exit_code == 0
    pid = background.start("probe", [sys.executable, "-c", "pass"])
    background.wait_exit(pid, 30)
    background.write_state("probe", {"url": "ws://127.0.0.1:1/ws"})
    database = resolve_paths().database
    async with (
        serve(ServerConfig(database=database), port=0) as gw,
        GatewayClient(gw.url, token=gw.token) as c,
    ):
        await c.call("config.set", {"path": "apiKeys.openai", "value": "sk-1"})
        await c.call("workspace.write", {"path": "notes/today.md", "content": "x\n" * 300})
    for n in range(20):  # past max_bytes: the log rotates
        logging.getLogger("gsv.test").warning("line %d of a rotating log", n)
    assert log_file.with_name(log_file.name + ".1").exists()


async def test_everything_under_gsv_home_is_owner_only(gsv_home: Path, file_logging: Path) -> None:
    """After CLI writes and a gateway run: every directory 0700, every file 0600
    (database, WAL/SHM, logs and their rotations, pid and state files, workspace,
    config.toml, secrets.toml), with the process's usual umask."""
    keyring.set_keyring(keyring.backends.fail.Keyring())  # secrets.toml is written
    await populate(file_logging)
    names = set(modes_under(gsv_home))
    for expected in ("config/config.toml", "config/secrets.toml", "data/gsv.db",
                     "logs/gateway.log", "logs/probe.out", "run/probe.pid",
                     "data/workspace"):  # fmt: skip
        assert expected in names
    assert any(name.endswith("today.md") for name in names)
    assert not_owner_only(gsv_home) == {}


async def test_wider_modes_are_tightened_at_start_with_one_line(
    gsv_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Paths an older gsv left 0755/0644 are made owner-only when the gateway starts;
    one warning counts them; a link out of GSV_HOME and its target are not touched."""
    paths = resolve_paths()
    for directory in (paths.config_dir, paths.log_dir, paths.data_dir / "workspace" / "a"):
        directory.mkdir(parents=True, mode=0o755)
    for file in (paths.config_file, paths.log_file("gateway"), paths.data_dir / "ws.md"):
        file.write_text("old\n")
        file.chmod(0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("not gsv's\n")
    outside.chmod(0o644)
    (paths.data_dir / "link").symlink_to(outside)
    gsv_home.chmod(0o755)
    wide = len(not_owner_only(gsv_home)) - 1  # the link's own bits are never changed
    async with serve(ServerConfig(database=paths.database), port=0):
        pass
    lines = [r.getMessage() for r in caplog.records if "owner-only" in r.getMessage()]
    assert lines == [f"tightened {wide} path(s) gsv keeps to owner-only modes (0700/0600)"]
    assert not_owner_only(gsv_home) == {"data/link": 0o777}
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644


# -- another user ------------------------------------------------------------------------


def as_nobody(*paths: Path) -> list[str]:
    """Try to read each path as user nobody; the outcome per path ("read" or the error)."""
    script = (
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        open(p, 'rb').read(1); print('read')\n"
        "    except OSError as e:\n"
        "        print(type(e).__name__)\n"
    )
    drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    result = subprocess.run(
        [*drop, sys.executable, "-c", script, *map(str, paths)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return result.stdout.split()


@pytest.fixture
def shared_gsv_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A GSV_HOME in a directory every user can search, so only gsv's modes stand in a
    stranger's way (pytest's own temp dirs are closed to others already)."""
    base = Path(tempfile.mkdtemp(prefix="gsv-shared-"))
    base.chmod(0o755)
    home = base / "gsv-home"
    monkeypatch.setenv("GSV_HOME", str(home))
    yield home
    shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as nobody")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv is not installed")
async def test_another_user_cannot_read_gsv_files(
    shared_gsv_home: Path, file_logging: Path
) -> None:
    """As nobody, opening the database, secrets.toml and the logs fails with
    PermissionError; a 0644 file beside GSV_HOME is readable (the control)."""
    keyring.set_keyring(keyring.backends.fail.Keyring())
    await populate(file_logging)  # creates GSV_HOME itself
    control = shared_gsv_home.parent / "control.txt"
    control.write_text("anyone\n")
    control.chmod(0o644)
    paths = resolve_paths()
    targets = [paths.database, paths.secrets_file, file_logging, background.output_file("probe")]
    assert all(p.exists() for p in targets)
    assert as_nobody(control, *targets) == ["read"] + ["PermissionError"] * len(targets)
