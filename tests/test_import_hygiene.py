"""`gsv --help` stays fast: the CLI's import path never pulls in the heavy libraries."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("textual", "websockets", "anthropic", "openai", "pydantic")

PROBE = """
import json, sys
{action}
print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))
"""

HELP = """
sys.argv = ["gsv"] + {argv!r}
from gsv_cli.main import main
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print()
"""


def _imported_after(action: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(action=action)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_imports_no_heavy_module() -> None:
    """`import gsv_cli.main` leaves textual, websockets, the LLM SDKs and pydantic unloaded."""
    loaded = _imported_after("import gsv_cli.main")
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_gsv_help_imports_no_heavy_module() -> None:
    """Rendering `gsv --help` imports none of the heavy modules."""
    loaded = _imported_after(HELP.format(argv=["--help"]))
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize(
    "argv", [["gateway", "--help"], ["config", "--help"], ["completions", "--help"]]
)
def test_group_help_imports_no_heavy_module_of_ours(argv: list[str]) -> None:
    """Group help screens import no heavy module either; pydantic is the one exception,
    because typer 0.29 itself builds its parameter converters with pydantic."""
    loaded = _imported_after(HELP.format(argv=argv))
    ours = set(HEAVY) - {"pydantic"}
    assert loaded.isdisjoint(ours), sorted(loaded & ours)


def test_gsv_help_runs_and_lists_the_command_groups() -> None:
    """The real `gsv --help` exits 0 and names the command groups."""
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for group in ("gateway", "config", "local-config", "completions", "init"):
        assert group in done.stdout
