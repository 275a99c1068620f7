"""`gsv gateway run|start|stop|status|logs|install|uninstall`: real gateway processes on
127.0.0.1 (subprocesses running `python -m gsv_cli`), and typer's CliRunner for the rest."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.paths import resolve_paths
from gsv_core.service import background

LISTENING = re.compile(
    r"^gsv gateway listening on ws://127\.0\.0\.1:(\d+)/ws "
    r"\(health: http://127\.0\.0\.1:(\d+)/health\)$"
)


def gsv_process(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`gsv ARGS` in a real subprocess (GSV_HOME and the XDG dirs come from the fixture)."""
    return subprocess.run(
        [sys.executable, "-m", "gsv_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def gsv(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def get_health(port: int) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture
def stop_gateway() -> Iterator[None]:
    """A background gateway a test started is stopped even when the test fails."""
    yield
    background.stop("gateway", timeout=10)


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that something already listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


# -- run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_announces_its_url_serves_health_and_exits_0_on_a_signal(sig: int) -> None:
    """`gateway run --port 0` prints the bound URL, answers /health, and a SIGTERM or
    Ctrl-C shuts it down with exit 0."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "gateway", "run", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = LISTENING.match(proc.stdout.readline().rstrip("\n"))
        assert match, "no listening line"
        port = int(match.group(1))
        assert port == int(match.group(2)) and port != 0
        assert get_health(port) == (200, {"status": "healthy"})
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 0, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    log = resolve_paths().log_file("gateway").read_text()
    assert f"gateway listening on ws://127.0.0.1:{port}/ws" in log
    assert "gateway shutting down" in log


async def test_the_first_run_makes_an_owner_token_the_cli_finds() -> None:
    """No token anywhere: `gateway run` makes one and keeps it in the secret store (here
    the 0600 file: no keyring in subprocesses); the CLI connects with no typing, a client
    without it is refused."""
    from gsv_core.client import GatewayClient
    from gsv_core.errors import Unauthorized

    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "gateway", "run", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = LISTENING.match(proc.stdout.readline().rstrip("\n"))
        assert match, "no listening line"
        url = f"ws://127.0.0.1:{match.group(1)}/ws"
        with pytest.raises(Unauthorized):
            await GatewayClient(url).connect()
        secrets_file = resolve_paths().secrets_file
        assert secrets_file.stat().st_mode & 0o777 == 0o600
        listed = gsv_process("--url", url, "sessions", "list")
        assert listed.returncode == 0, listed.stderr
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_run_refuses_to_listen_beyond_loopback_without_tls() -> None:
    """Binding 0.0.0.0 with no TLS and no --insecure-no-tls exits 1 with the reason."""
    done = gsv_process("gateway", "run", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 1
    assert "refusing to listen on 0.0.0.0 without TLS" in done.stderr
    assert "--insecure-no-tls" in done.stderr
    assert "listening" not in done.stdout
    assert "Traceback" not in done.stderr


def test_run_reports_a_port_in_use_in_one_line(busy_port: int) -> None:
    """A port something else holds gives one clear error line and exit 1."""
    done = gsv_process("gateway", "run", "--port", str(busy_port))
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if "cannot listen" in line]
    assert len(errors) == 1, done.stderr  # not repeated as a log record
    assert "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{busy_port}" in errors[0]
    assert "already in use" in errors[0]


def test_run_rejects_a_port_out_of_range() -> None:
    """--port above 65535 is a usage error (exit 2)."""
    assert gsv("gateway", "run", "--port", "70000").exit_code == 2


# -- start / status / logs / stop --------------------------------------------------------


def test_start_status_logs_stop_end_to_end(stop_gateway: None) -> None:
    """start runs a healthy background gateway; status, logs and stop see the same one."""
    started = gsv_process("gateway", "start", "--port", "0")
    assert started.returncode == 0, started.stderr
    pid = int(re.search(r"started \(pid (\d+)\)", started.stdout).group(1))  # type: ignore[union-attr]
    url = re.search(r"url:\s+(ws://\S+)", started.stdout).group(1)  # type: ignore[union-attr]
    assert str(resolve_paths().log_file("gateway")) in started.stdout

    status = gsv_process("gateway", "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["pid"] == pid and report["running"] is True
    assert report["url"] == url
    assert report["healthy"] is True and report["health"] == {"status": "healthy"}

    logs = gsv_process("gateway", "logs", "-n", "50")
    assert logs.returncode == 0
    assert f"gateway listening on {url}" in logs.stdout

    again = gsv_process("gateway", "start", "--port", "0")
    assert again.returncode == 1
    assert f"already running (pid {pid})" in again.stderr

    stopped = gsv_process("gateway", "stop")
    assert stopped.returncode == 0
    assert f"stopped gateway (pid {pid})" in stopped.stdout
    assert not background.is_running(pid)

    after = gsv_process("gateway", "status", "--url", url)
    assert after.returncode == 1
    assert "not running" in after.stdout and "no answer" in after.stdout


def test_start_with_a_fixed_port_prints_that_url(stop_gateway: None) -> None:
    """start --port N listens on N and status (text output) calls it healthy."""
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = gsv_process("gateway", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    assert f"url:    ws://127.0.0.1:{port}/ws" in started.stdout
    assert get_health(port)[0] == 200
    status = gsv("gateway", "status")
    assert status.exit_code == 0
    assert "health: healthy" in status.stdout


def free_port() -> int:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def saved_url() -> object:
    from gsv_core.localconfig import load_local_config

    return load_local_config().stored("gateway.url")


def test_start_on_another_port_points_later_commands_there(stop_gateway: None) -> None:
    """`start --port N` away from the URL the commands use: the gateway saves its URL as
    gateway.url and says so, and a later command finds it with no --url."""
    port = free_port()
    started = gsv_process("gateway", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    url = f"ws://127.0.0.1:{port}/ws"
    assert f"later gsv commands connect to {url} (saved as gateway.url" in started.stdout
    assert saved_url() == url
    status = gsv_process("status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["gateway"]["url"] == url


def test_a_url_the_caller_chose_is_never_overridden(stop_gateway: None) -> None:
    """With --url (or GSV_URL) the caller says where to look: nothing is saved; nor when
    the user named no port (the gateway listens where the commands already look)."""
    elsewhere = f"ws://127.0.0.1:{free_port()}/ws"
    started = gsv_process("--url", elsewhere, "gateway", "start", "--port", str(free_port()))
    assert started.returncode == 0, started.stderr
    assert "later gsv commands" not in started.stdout and saved_url() is None
    assert gsv_process("gateway", "stop").returncode == 0
    port = free_port()
    env = {**os.environ, "GSV_URL": f"ws://127.0.0.1:{port}/ws"}
    again = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "gateway", "start"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"url:    ws://127.0.0.1:{port}/ws" in again.stdout
    assert "later gsv commands" not in again.stdout and saved_url() is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("ws://127.0.0.1:8080/ws", "ws://localhost:8080/ws", True),
        ("ws://[::1]:8080/ws", "ws://127.0.0.1:8080/ws", True),
        ("ws://127.0.0.1:8080/ws", "ws://127.0.0.1:8081/ws", False),
        ("wss://127.0.0.1:8080/ws", "ws://127.0.0.1:8080/ws", False),
        ("ws://gw.example:8080/ws", "ws://127.0.0.1:8080/ws", False),
        ("ws://127.0.0.1:99999/ws", "ws://127.0.0.1:99999/ws", False),  # no such port
    ],
)
def test_same_place_tells_loopback_names_apart_from_other_places(
    a: str, b: str, same: bool
) -> None:
    from gsv_cli.remembered_url import same_place

    assert same_place(a, b) is same


def test_start_shows_the_output_of_a_gateway_that_died(busy_port: int) -> None:
    """When the gateway exits before it is healthy, start prints its last output, exits 1
    and leaves no pid file behind."""
    done = gsv_process("gateway", "start", "--port", str(busy_port))
    assert done.returncode == 1
    assert "exited before it was ready" in done.stderr
    assert "already in use" in done.stderr
    assert not background.pid_file("gateway").exists()


def test_stop_when_nothing_runs_exits_0_and_says_so() -> None:
    """stop without a background gateway is not an error."""
    result = gsv("gateway", "stop")
    assert result.exit_code == 0
    assert "gateway is not running" in result.stdout


def test_status_without_a_gateway_exits_1(busy_port: int) -> None:
    """status against a URL where no gateway answers reports it and exits 1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    result = gsv("--json", "gateway", "status", "--url", f"ws://127.0.0.1:{closed}/ws")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report == {
        "pid": None,
        "running": False,
        "url": f"ws://127.0.0.1:{closed}/ws",
        "healthy": False,
        "health": None,
        "log": str(resolve_paths().log_file("gateway")),
    }


def test_status_uses_the_global_url_when_nothing_was_started() -> None:
    """Without a state file the global --url decides where /health is asked."""
    result = gsv("--url", "ws://127.0.0.1:9/ws", "gateway", "status")
    assert result.exit_code == 1
    assert "url:    ws://127.0.0.1:9/ws" in result.stdout


def test_logs_prints_the_last_lines_of_the_gateway_log() -> None:
    """logs -n 2 prints the last two lines of logs/gateway.log."""
    path = resolve_paths().log_file("gateway")
    path.parent.mkdir(parents=True)
    path.write_text("first\nsecond\nthird\n")
    result = gsv("gateway", "logs", "-n", "2")
    assert result.exit_code == 0
    assert result.stdout == "second\nthird\n"


@contextmanager
def ctrl_c_not_ignored() -> Iterator[None]:
    """A child started in here gets SIGINT as a terminal's Ctrl-C would deliver it: a test
    run started as a script's background job has SIGINT ignored, and an ignored signal
    stays ignored across exec (then Python in the child never raises KeyboardInterrupt)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_logs_follow_prints_new_lines_until_interrupted() -> None:
    """logs --follow prints the tail, then lines appended later; Ctrl-C ends it (130)."""
    path = resolve_paths().log_file("gateway")
    path.parent.mkdir(parents=True)
    path.write_text("old\nlatest\n")
    with ctrl_c_not_ignored():
        proc = subprocess.Popen(
            [sys.executable, "-m", "gsv_cli", "gateway", "logs", "--follow", "-n", "1"],
            stdout=subprocess.PIPE,
            text=True,
        )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "latest\n"
        with path.open("a") as f:
            f.write("appended\n")
        assert proc.stdout.readline() == "appended\n"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_logs_without_a_log_file_exits_1() -> None:
    """Before the gateway ever ran there is no log: an error on stderr, exit 1."""
    result = gsv("gateway", "logs")
    assert result.exit_code == 1
    assert "no log file" in result.stderr


# -- install / uninstall -----------------------------------------------------------------


@pytest.fixture
def no_service_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH is an empty directory: systemctl/launchctl cannot run."""
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd unit on Linux")
def test_install_writes_the_systemd_unit_and_says_what_to_run(
    tmp_path: Path, no_service_manager: None
) -> None:
    """install writes gsv-gateway.service running `gateway run` with the options, and
    prints the systemctl commands to run by hand when systemctl is missing."""
    result = gsv("gateway", "install", "--port", "9999", "--insecure-no-tls")
    assert result.exit_code == 0, result.stderr
    unit = tmp_path / "xdg-config/systemd/user/gsv-gateway.service"
    assert f"wrote {unit}" in result.stdout
    assert "systemctl --user enable --now gsv-gateway.service" in result.stdout
    assert "systemctl was not found" in result.stderr
    text = unit.read_text()
    assert (
        f"ExecStart={sys.executable} -m gsv_cli gateway run --host 127.0.0.1 --port 9999 "
        "--insecure-no-tls --remember" in text.splitlines()
    )
    assert f"Environment=GSV_HOME={os.environ['GSV_HOME']}" in text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd unit on Linux")
def test_uninstall_removes_the_unit_and_is_idempotent(
    tmp_path: Path, no_service_manager: None
) -> None:
    """uninstall removes the unit file; a second uninstall says nothing is installed."""
    assert gsv("gateway", "install").exit_code == 0
    unit = tmp_path / "xdg-config/systemd/user/gsv-gateway.service"
    removed = gsv("gateway", "uninstall")
    assert removed.exit_code == 0
    assert f"removed {unit}" in removed.stdout
    assert not unit.exists()
    again = gsv("gateway", "uninstall")
    assert again.exit_code == 0
    assert "no gateway service installed" in again.stdout


def test_run_listens_where_gsv_url_points() -> None:
    """With no --host/--port, `gateway run` takes the port (and a local host) from the
    gateway URL every other command uses (here GSV_URL)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "gateway", "run"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "GSV_URL": f"ws://127.0.0.1:{port}/ws"},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        match = LISTENING.match(proc.stdout.readline().rstrip("\n"))
        assert match and int(match.group(1)) == port
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
