"""Service units: the generated systemd unit and launchd plist, and install/uninstall with
real (stand-in) systemctl programs on PATH, or none at all."""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.errors import Unavailable
from gsv_core.service.background import output_file
from gsv_core.service.units import ServiceSpec
from gsv_core.service.units import install_service
from gsv_core.service.units import launchd_plist
from gsv_core.service.units import service_environment
from gsv_core.service.units import service_manager
from gsv_core.service.units import systemd_quote
from gsv_core.service.units import systemd_unit
from gsv_core.service.units import uninstall_service
from gsv_core.service.units import unit_path

ARGV = [sys.executable, "-m", "gsv_cli", "gateway", "run", "--port", "9999"]


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holds only an empty directory: no systemctl or launchctl can run."""
    bin_dir = tmp_path / "empty-bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _fake_tool(bin_dir: Path, name: str, exit_code: int, stderr: str = "") -> Path:
    """A real executable named like the service manager that records its argv."""
    record = bin_dir / f"{name}.calls"
    script = bin_dir / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"with open({str(record)!r}, 'a') as f: f.write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"sys.stderr.write({stderr!r})\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return record


def _spec() -> ServiceSpec:
    return ServiceSpec("gateway", "gsv gateway", ARGV, {"PATH": "/usr/bin:/bin"})


# -- generators --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "quoted"),
    [
        ("plain-word_1.0", "plain-word_1.0"),
        ("/usr/bin/python3", "/usr/bin/python3"),
        ("a b", '"a b"'),
        ('x"y', '"x\\"y"'),
        ("it's", '"it\'s"'),
        ("100%", '"100%%"'),
        ("$HOME", '"$$HOME"'),
        ("${HOME}", '"$${HOME}"'),
        ("back\\slash", '"back\\\\slash"'),
        ("", '""'),
        (";", '";"'),
        ("line\nbreak\ttab", '"line\\nbreak\\ttab"'),
        ("bell\x07", '"bell\\x07"'),
    ],
)
def test_command_words_are_quoted_and_escaped_for_systemd(word: str, quoted: str) -> None:
    """Spaces, quotes, backslashes, control characters, `%` and `$` survive systemd's parser."""
    assert systemd_quote(word) == quoted


def test_environment_values_keep_dollar_but_escape_percent_and_quotes() -> None:
    """Environment= takes `$` literally, but `%` and quotes still need escaping."""
    assert systemd_quote('A=x "$y" 5%', in_command=False) == '"A=x \\"$y\\" 5%%"'
    assert systemd_quote("PATH=/usr/bin:/bin", in_command=False) == "PATH=/usr/bin:/bin"


def test_systemd_unit_runs_the_argv_restarts_on_failure_and_sets_the_environment() -> None:
    """The unit has ExecStart, Restart=on-failure, RestartSec, WantedBy and Environment lines."""
    text = systemd_unit(
        "gsv gateway", ARGV, {"PATH": "/usr/bin:/bin", "GSV_HOME": "/home/me/my gsv"}
    )
    lines = text.splitlines()
    assert "Description=gsv gateway" in lines
    assert f"ExecStart={sys.executable} -m gsv_cli gateway run --port 9999" in lines
    assert "Environment=PATH=/usr/bin:/bin" in lines
    assert 'Environment="GSV_HOME=/home/me/my gsv"' in lines
    assert "Restart=on-failure" in lines
    assert "RestartSec=5" in lines
    assert lines[lines.index("[Install]") + 1] == "WantedBy=default.target"


def test_systemd_unit_escapes_percent_in_the_description() -> None:
    """A `%` in the description is not taken for a specifier."""
    assert "Description=100%% sure" in systemd_unit("100% sure", ARGV, {}).splitlines()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_analyze_accepts_a_unit_with_awkward_arguments(tmp_path: Path) -> None:
    """systemd's own parser reports nothing about quoting, escapes or specifiers (it exits 0
    even for some bad values, so its stderr is checked)."""
    argv = [sys.executable, "-c", "pass", "a b", 'x"y', "%Z", "$HOME", "\\q", "", ";", "ü\n"]
    env = {"PATH": os.defpath, "WEIRD": 'a "b" $c %Z \\q'}
    unit = tmp_path / "gsv-check.service"
    unit.write_text(systemd_unit("gsv % check", argv, env))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    complaints = [line for line in done.stderr.splitlines() if unit.name in line]
    assert done.returncode == 0, done.stderr
    assert complaints == []


def test_a_service_needs_an_absolute_program() -> None:
    """A relative argv[0] (or none) is refused before anything is written."""
    with pytest.raises(InvalidParams):
        systemd_unit("x", ["python3", "-m", "gsv_cli"], {})
    with pytest.raises(InvalidParams):
        launchd_plist("dev.gsv.x", [], {}, Path("/tmp/o"), Path("/tmp/e"))


def test_invalid_environment_names_are_refused() -> None:
    """An environment name with `=` or spaces cannot be written into a unit."""
    with pytest.raises(InvalidParams):
        systemd_unit("x", ARGV, {"BAD NAME": "1"})
    with pytest.raises(InvalidParams):
        launchd_plist("dev.gsv.x", ARGV, {"A=B": "1"}, Path("/tmp/o"), Path("/tmp/e"))


def test_launchd_plist_round_trips_through_plistlib() -> None:
    """The plist parses back to the label, argv, environment and restart policy."""
    env = {"PATH": "/usr/bin", "GSV_HOME": '/Users/me/odd "dir" $x %y'}
    raw = launchd_plist("dev.gsv.gateway", ARGV, env, Path("/tmp/out.log"), Path("/tmp/err.log"))
    assert plistlib.loads(raw) == {
        "Label": "dev.gsv.gateway",
        "ProgramArguments": ARGV,
        "EnvironmentVariables": env,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 5,
        "StandardOutPath": "/tmp/out.log",
        "StandardErrorPath": "/tmp/err.log",
    }


# -- where units go ----------------------------------------------------------------------


def test_service_manager_follows_the_platform() -> None:
    """Linux uses systemd, macOS launchd, anything else is refused."""
    assert service_manager("linux") == "systemd"
    assert service_manager("darwin") == "launchd"
    with pytest.raises(Unavailable):
        service_manager("win32")


def test_systemd_units_go_under_xdg_config_home(tmp_path: Path) -> None:
    """With XDG_CONFIG_HOME set (by the autouse fixture) the unit lives under it."""
    assert unit_path("node", "systemd") == tmp_path / "xdg-config/systemd/user/gsv-node.service"


def test_systemd_units_default_to_dot_config_without_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without XDG_CONFIG_HOME (or with a relative one) the unit lives under ~/.config."""
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    assert (
        unit_path("gateway", "systemd")
        == tmp_path / "home/.config/systemd/user/gsv-gateway.service"
    )
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert unit_path("gateway", "systemd").parent == tmp_path / "home/.config/systemd/user"


def test_launchd_agents_go_under_library_launch_agents(tmp_path: Path) -> None:
    """The plist is ~/Library/LaunchAgents/dev.gsv.NAME.plist."""
    assert (
        unit_path("gateway", "launchd")
        == tmp_path / "home/Library/LaunchAgents/dev.gsv.gateway.plist"
    )


def test_bad_service_names_are_refused() -> None:
    """A name that would escape the unit directory is refused."""
    with pytest.raises(InvalidParams):
        unit_path("../evil", "systemd")


def test_service_environment_carries_path_and_an_absolute_gsv_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service sees the installer's PATH and GSV_HOME, made absolute."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GSV_HOME", "gsv-home")
    monkeypatch.setenv("PATH", "/opt/x/bin:/usr/bin")
    assert service_environment() == {
        "PATH": "/opt/x/bin:/usr/bin",
        "GSV_HOME": str(tmp_path / "gsv-home"),
    }


def test_service_environment_omits_gsv_home_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without GSV_HOME the service uses the same platform directories as the user."""
    monkeypatch.delenv("GSV_HOME")
    assert set(service_environment()) == {"PATH"}


# -- install / uninstall -----------------------------------------------------------------


def test_install_without_systemctl_writes_the_unit_and_says_what_to_run(empty_path: Path) -> None:
    """With no systemctl on PATH the unit is still written; the result lists the commands."""
    result = install_service(_spec(), platform="linux")
    assert result.path == unit_path("gateway", "systemd")
    assert "ExecStart=" in result.path.read_text()
    assert not result.activated
    assert result.ran == ()
    assert result.manual == (
        "systemctl --user daemon-reload",
        "systemctl --user enable --now gsv-gateway.service",
    )
    assert result.problem is not None and "systemctl was not found" in result.problem


def test_install_runs_systemctl_when_it_works(empty_path: Path) -> None:
    """A working systemctl gets daemon-reload then enable --now; nothing is left to the user."""
    calls = _fake_tool(empty_path, "systemctl", 0)
    result = install_service(_spec(), platform="linux")
    assert result.activated and result.problem is None
    assert calls.read_text().splitlines() == [
        "--user daemon-reload",
        "--user enable --now gsv-gateway.service",
    ]


def test_install_reports_a_failing_systemctl_without_raising(empty_path: Path) -> None:
    """No user bus (CI): the failing command and the rest are left to the user, with why."""
    _fake_tool(empty_path, "systemctl", 1, "Failed to connect to bus: No medium found")
    result = install_service(_spec(), platform="linux")
    assert result.path.exists()
    assert result.manual[0] == "systemctl --user daemon-reload"
    assert result.problem is not None and "Failed to connect to bus" in result.problem


def test_reinstall_replaces_the_unit_and_restarts_it(empty_path: Path) -> None:
    """Installing again rewrites the file and restarts the running service."""
    install_service(_spec(), platform="linux")
    newer = ServiceSpec("gateway", "gsv gateway", [*ARGV[:-1], "7777"], {})
    result = install_service(newer, platform="linux")
    assert "--port 7777" in result.path.read_text()
    assert result.manual[-1] == "systemctl --user restart gsv-gateway.service"


def test_uninstall_removes_the_unit_and_its_enable_link(empty_path: Path) -> None:
    """Without systemctl, uninstall still removes the unit and the default.target.wants link."""
    path = install_service(_spec(), platform="linux").path
    wants = path.parent / "default.target.wants"
    wants.mkdir()
    (wants / path.name).symlink_to(path)
    result = uninstall_service("gateway", platform="linux")
    assert result.changed
    assert not path.exists()
    assert not (wants / path.name).is_symlink()
    assert result.manual == (
        "systemctl --user stop gsv-gateway.service",
        "systemctl --user daemon-reload",
    )


def test_uninstall_runs_disable_and_daemon_reload_when_systemctl_works(empty_path: Path) -> None:
    """A working systemctl disables and stops the unit, then reloads."""
    install_service(_spec(), platform="linux")
    calls = _fake_tool(empty_path, "systemctl", 0)
    result = uninstall_service("gateway", platform="linux")
    assert result.activated
    assert calls.read_text().splitlines() == [
        "--user disable --now gsv-gateway.service",
        "--user daemon-reload",
    ]


def test_uninstall_of_a_missing_service_changes_nothing(empty_path: Path) -> None:
    """Uninstalling what was never installed is not an error and runs nothing."""
    result = uninstall_service("gateway", platform="linux")
    assert not result.changed
    assert result.manual == ()


def test_install_on_macos_writes_a_launch_agent(empty_path: Path) -> None:
    """With platform darwin the plist is written and `launchctl load -w` is left to run."""
    result = install_service(_spec(), platform="darwin")
    agent = plistlib.loads(result.path.read_bytes())
    assert agent["ProgramArguments"] == ARGV
    assert agent["StandardErrorPath"] == str(output_file("gateway"))
    assert output_file("gateway").parent.is_dir()
    assert result.manual == (f"launchctl load -w {result.path}",)


def test_uninstall_on_macos_removes_the_launch_agent(empty_path: Path) -> None:
    """Uninstall removes the plist and, without launchctl, says how to remove the job."""
    path = install_service(_spec(), platform="darwin").path
    result = uninstall_service("gateway", platform="darwin")
    assert not path.exists()
    assert result.manual == ("launchctl remove dev.gsv.gateway",)
