"""Commands confined by real bubblewrap: what they cannot see (other processes, gsv's
files, credential stores, the host's /tmp), what they cannot do (write outside the
workspace, reach the network, read a provider key), what still works (writing in the
workspace, timeouts and kills of the whole tree), and a full-access call as before."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.approval.binding import FULL
from gsv_core.node.tools import Toolset
from gsv_core.paths import resolve_paths
from tests.node.sandbox.conftest import PROVIDER_KEY
from tests.node.sandbox.conftest import Outsider
from tests.node.sandbox.conftest import bash
from tests.node.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap


async def test_no_other_process_of_the_machine_is_visible(
    confined: Toolset, outsider: Outsider
) -> None:
    """Its own /proc: `ps ax` lists the sandbox's processes only; the outsider's pid,
    environment and open files are not there to read (unlike outside, checked last)."""
    result = await bash(confined, "ps ax -o pid=,args=")
    pids = {int(line.split()[0]) for line in result["output"].splitlines() if line.strip()}
    assert str(outsider.pid) not in result["output"] and max(pids) < 50
    leak = await bash(confined, f"grep -ra sk-ant- /proc/{outsider.pid} 2>&1; ls /proc/*/fd 2>&1")
    assert PROVIDER_KEY not in leak["output"] and "held-open" not in leak["output"]
    environ = Path(f"/proc/{outsider.pid}/environ").read_bytes()
    assert PROVIDER_KEY.encode() in environ  # outside, it is there to be read


async def test_ps_with_the_environment_shows_no_provider_key(
    confined: Toolset, outsider: Outsider
) -> None:
    """`ps eww` / `ps axeww` print environments: only the sandbox's own, without keys."""
    for line in (f"ps eww -p {outsider.pid}", "ps axeww", "grep -ra --include=environ KEY /proc"):
        result = await bash(confined, line)
        assert PROVIDER_KEY not in result["output"], line


async def test_gsvs_own_files_are_hidden(confined: Toolset) -> None:
    """The secret store, the database and its WAL, the config: empty to a confined command."""
    paths = resolve_paths()
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    paths.secrets_file.write_text('"gateway.token" = "owner-token-SECRET"\n')
    paths.database.write_text("my bank PIN is 4711")
    result = await bash(
        confined,
        f"cat {paths.secrets_file} {paths.database} 2>&1; ls -a {paths.config_dir} {paths.data_dir}",
    )
    assert "owner-token-SECRET" not in result["output"] and "4711" not in result["output"]
    assert "No such file" in result["output"]
    full = await bash(confined, f"cat {paths.secrets_file}", FULL)
    assert "owner-token-SECRET" in full["output"]  # approved: as the node's user


@pytest.fixture
def home_outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home directory where homes are (not under /tmp, which the sandbox replaces)."""
    home = Path(tempfile.mkdtemp(prefix="gsv-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


async def test_credential_stores_are_hidden(home_outside_tmp: Path, make_toolset: Any) -> None:
    """~/.ssh, ~/.aws, ~/.netrc and the like read as empty or absent; the rest of the
    home directory stays readable."""
    home = home_outside_tmp
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key=AWSSECRET")
    (home / ".netrc").write_text("machine x login me password NETRCSECRET")
    (home / "notes.txt").write_text("an ordinary file")
    result = await bash(
        make_toolset(), "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/notes.txt 2>&1"
    )
    for secret in ("PRIVATE-KEY-MATERIAL", "AWSSECRET", "NETRCSECRET"):
        assert secret not in result["output"]
    assert "an ordinary file" in result["output"]  # the rest of home stays readable


async def test_a_symlink_in_the_workspace_to_the_secret_store_leads_nowhere(
    confined: Toolset, workspace: Path
) -> None:
    """A link that came with a cloned project (`notes -> secrets.toml`) reads as nothing:
    the link is followed inside the sandbox, where the store is hidden."""
    paths = resolve_paths()
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    paths.secrets_file.write_text('"gateway.token" = "owner-token-SECRET"\n')
    (workspace / "notes").symlink_to(paths.secrets_file)
    result = await bash(confined, "cat notes 2>&1")
    assert "owner-token-SECRET" not in result["output"]


async def test_a_write_inside_the_workspace_works_and_outside_it_fails_with_a_note(
    confined: Toolset, workspace: Path, tmp_path: Path
) -> None:
    """The workspace is read-write; elsewhere the file system is read-only (the host's
    /tmp is not even visible), and the result says why and what would allow it."""
    inside = await bash(
        confined, "mkdir -p build && echo built > build/out.txt && cat build/out.txt"
    )
    assert (
        inside["status"] == "completed"
        and (workspace / "build" / "out.txt").read_text() == "built\n"
    )
    target = Path("/var/tmp") / f"gsv-sandbox-{os.getpid()}"
    outside = await bash(confined, f"echo x > {target}")
    assert outside["status"] == "failed" and not target.exists()
    assert "Read-only file system" in outside["output"]
    assert "sandbox" in outside["note"] and '"unsandboxed": true' in outside["note"]
    assert "node.sandboxWritable" in outside["note"]


async def test_the_hosts_tmp_is_not_visible_and_its_own_is_private(
    confined: Toolset, tmp_path: Path
) -> None:
    (tmp_path / "host-file").write_text("host")
    result = await bash(
        confined, f"ls {tmp_path} 2>&1; echo scratch > /tmp/scratch && cat /tmp/scratch"
    )
    assert "host-file" not in result["output"] and "scratch" in result["output"]
    assert not Path("/tmp/scratch").exists()


async def test_git_metadata_in_the_workspace_stays_read_only(
    confined: Toolset, workspace: Path
) -> None:
    """`.git` decides what git runs later, outside the sandbox: a confined command cannot
    plant a hook or change its config."""
    (workspace / ".git" / "hooks").mkdir(parents=True)
    result = await bash(confined, "echo 'rm -rf ~' > .git/hooks/pre-commit")
    assert (
        result["status"] == "failed" and not (workspace / ".git" / "hooks" / "pre-commit").exists()
    )


async def test_the_environment_carries_no_credential(
    confined: Toolset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GSV_TOKEN, a node credential and provider keys are dropped; the rest stays."""
    monkeypatch.setenv("GSV_TOKEN", "owner-token-SECRET")
    monkeypatch.setenv("GSV_NODE_CREDENTIALS_N1", "node-credential-SECRET")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-SECRET")
    monkeypatch.setenv("MY_PROJECT_SETTING", "kept")
    result = await bash(confined, "env")
    assert "SECRET" not in result["output"] and "MY_PROJECT_SETTING=kept" in result["output"]


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers every connection with `hello`."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    thread.join(timeout=30)


CONNECT = (
    'python3 -c \'import socket,sys; s=socket.create_connection(("127.0.0.1", {port}), 10); '
    "print(s.recv(10).decode())'"
)


async def test_no_network_by_default_with_a_clear_note(confined: Toolset, listener: int) -> None:
    """Not even loopback: the gateway's port is out of reach; the note says how to allow it."""
    result = await bash(confined, CONNECT.format(port=listener))
    assert result["status"] == "failed" and "hello" not in result["output"]
    assert "no network" in result["note"] and "node.sandboxNetwork" in result["note"]
    full = await bash(confined, CONNECT.format(port=listener), FULL)
    assert "hello" in full["output"]


async def test_the_network_when_the_owner_allows_it(make_toolset: Any, listener: int) -> None:
    tools: Toolset = make_toolset(network=True)
    result = await bash(tools, CONNECT.format(port=listener))
    assert result["status"] == "completed" and "hello" in result["output"]


def _alive(marker: str) -> list[str]:
    """The pids of processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(entry)
    return found


async def test_a_timeout_kills_the_whole_sandboxed_tree(confined: Toolset) -> None:
    """Children, a `setsid` escapee and the sandbox itself: nothing survives the deadline."""
    marker = f"sleep 3{os.getpid() % 1000:03d}"
    result = await bash(confined, f"setsid {marker} & {marker} & {marker}", timeout=500)
    assert result["timedOut"] is True
    await _gone(marker)


async def test_a_cancelled_call_kills_the_whole_sandboxed_tree(confined: Toolset) -> None:
    import asyncio

    marker = f"sleep 4{os.getpid() % 1000:03d}"
    call = asyncio.create_task(bash(confined, f"{marker} & {marker}"))
    await _until(lambda: len(_alive(marker)) >= 2)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await _gone(marker)


async def _until(condition: Any) -> None:
    import asyncio

    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.02)


async def _gone(marker: str) -> None:
    await _until(lambda: not _alive(marker))
    assert _alive(marker) == []
