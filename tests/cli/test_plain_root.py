"""A command line that gives no root option taking a value is served by a plain root
(gsv_cli.main.build_app(plain=True)): it prints what the full root prints, passes --json
on, and `gsv <group> --help` then never imports pydantic."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gsv_cli.entries import ENTRIES
from gsv_cli.main import build_app
from gsv_cli.main import plain_root
from gsv_core.gateway.server import RunningGateway
from tests.test_import_hygiene import HEAVY
from tests.test_import_hygiene import HELP

NAMES = [entry.name for entry in ENTRIES]


def both(name: str, args: list[str]) -> list[tuple[int, str]]:
    """Exit code and output of the same command line under the plain and the full root."""
    runs = [CliRunner().invoke(build_app(name, plain), args) for plain in (True, False)]
    return [(run.exit_code, run.output) for run in runs]


@pytest.mark.parametrize("name", NAMES)
def test_help_is_the_same_under_the_plain_root(name: str) -> None:
    """`gsv <name> --help` (and with --json first) prints the same under either root."""
    for args in ([name, "--help"], ["--json", name, "-h"]):
        plain, full = both(name, args)
        assert plain == full
        assert plain[0] == 0


@pytest.mark.parametrize("args", [["sessions", "--bogus"], ["cron", "add"], ["-V", "config"]])
def test_errors_and_the_version_are_the_same_under_the_plain_root(args: list[str]) -> None:
    """A usage error inside the command, and the eager --version, print the same."""
    plain, full = both(args[-1] if args[0] == "-V" else args[0], args)
    assert plain == full


@pytest.mark.parametrize(
    ("args", "plain"),
    [
        (["sessions", "--help"], True),
        (["--json", "sessions", "list", "--url", "x"], True),  # after the command: its own
        (["-V", "cron"], True),
        (["--url", "ws://h/ws", "sessions", "list"], False),
        (["-t", "secret", "sessions"], False),
        (["--url=ws://h/ws", "sessions"], False),
        (["--help", "sessions"], False),
        (["--install-completion", "sessions"], False),
    ],
)
def test_the_plain_root_serves_only_lines_without_other_root_options(
    args: list[str], plain: bool
) -> None:
    """Only --json and --version may come before the command for the plain root to serve."""
    assert plain_root(args) == plain


def test_global_json_reaches_the_command_through_the_plain_root(
    live: RunningGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gsv --json sessions list` (the gateway from GSV_URL) prints the JSON listing."""
    monkeypatch.setenv("GSV_URL", live.url)
    result = CliRunner().invoke(build_app("sessions", True), ["--json", "sessions", "list"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)) == {"sessions", "count"}


@pytest.mark.parametrize("argv", [["sessions", "--help"], ["--json", "cron", "--help"]])
def test_group_help_imports_no_heavy_module(argv: list[str]) -> None:
    """`gsv <group> --help` imports none of the heavy libraries, pydantic included."""
    probe = "import json, sys\n" + HELP.format(argv=argv)
    probe += "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
