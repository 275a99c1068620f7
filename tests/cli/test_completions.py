"""Shell completions: committed scripts match what gsv generates, and real shells complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gsv_cli.commands.completions import Shell
from gsv_cli.commands.completions import completion_script
from gsv_cli.main import app

ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = str(Path(sys.executable).parent)


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": BIN_DIR + os.pathsep + os.environ.get("PATH", "")}


@pytest.mark.parametrize("shell", list(Shell))
def test_committed_completion_scripts_are_up_to_date(shell: Shell) -> None:
    """completions/gsv.<shell> is exactly what `gsv completions show <shell>` prints."""
    committed = (ROOT / "completions" / f"gsv.{shell.value}").read_text()
    assert committed == completion_script(shell), (
        f"completions/gsv.{shell.value} is stale: regenerate it with "
        f"`gsv completions show {shell.value} > completions/gsv.{shell.value}`"
    )


def test_show_prints_the_script_for_the_named_shell() -> None:
    """`gsv completions show zsh` prints the zsh script, not the bash one."""
    result = CliRunner().invoke(app, ["completions", "show", "zsh"])
    assert result.exit_code == 0
    assert result.stdout.startswith("#compdef gsv")


def test_show_refuses_an_unknown_shell() -> None:
    """An unsupported shell is a usage error (exit 2)."""
    result = CliRunner().invoke(app, ["completions", "show", "tcsh"])
    assert result.exit_code == 2


def test_the_completion_backend_offers_command_groups() -> None:
    """The callback the scripts run (`_GSV_COMPLETE=complete_bash gsv`) names the groups."""
    env = {**_env(), "COMP_WORDS": "gsv gat", "COMP_CWORD": "1", "_GSV_COMPLETE": "complete_bash"}
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "gateway" in done.stdout.split()


def test_bash_completes_gsv_subcommands_for_real(tmp_path: Path) -> None:
    """Sourcing the committed bash script in a real bash completes `gsv conf` to config."""
    if shutil.which("gsv", path=BIN_DIR) is None:
        pytest.skip("the gsv console script is not installed in this environment")
    script = ROOT / "completions" / "gsv.bash"
    probe = (
        f"source {script}; COMP_WORDS=(gsv conf); COMP_CWORD=1; "
        '_gsv_completion gsv; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", probe], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["config"], done.stderr


@pytest.mark.parametrize(
    ("shell", "expected"),
    [(Shell.bash, "bash-completion/completions/gsv"), (Shell.fish, "fish/completions/gsv.fish")],
)
def test_install_writes_the_script_where_the_shell_looks(
    shell: Shell, expected: str, tmp_path: Path
) -> None:
    """`gsv completions install SHELL` writes the committed script to the shell's directory."""
    result = CliRunner().invoke(app, ["completions", "install", shell.value])
    assert result.exit_code == 0, result.output
    roots = [Path(os.environ["XDG_DATA_HOME"]), Path(os.environ["XDG_CONFIG_HOME"])]
    written = [root / expected for root in roots if (root / expected).exists()]
    assert len(written) == 1
    assert written[0].read_text() == completion_script(shell)


def test_zsh_install_adds_fpath_once() -> None:
    """Installing zsh completions twice adds the fpath block to .zshrc only once."""
    runner = CliRunner()
    for _ in range(2):
        assert runner.invoke(app, ["completions", "install", "zsh"]).exit_code == 0
    home = Path(os.environ["HOME"])
    assert (home / ".zfunc" / "_gsv").read_text() == completion_script(Shell.zsh)
    assert (home / ".zshrc").read_text().count("# gsv completions") == 1


def test_install_without_a_shell_uses_shell_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no SHELL argument the shell comes from $SHELL; an unknown one is a usage error."""
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    assert CliRunner().invoke(app, ["completions", "install"]).exit_code == 0
    monkeypatch.setenv("SHELL", "/bin/tcsh")
    result = CliRunner().invoke(app, ["completions", "install"])
    assert result.exit_code == 2
    assert "SHELL" in result.output


def test_fish_completes_gsv_subcommands_for_real() -> None:
    """A real fish with the committed script completes `gsv conf` to config (skips without fish)."""
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (.ci/run installs it)")
    script = ROOT / "completions" / "gsv.fish"
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -C 'gsv conf'"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["config"], done.stderr


def test_zsh_accepts_the_script_and_its_backend_completes() -> None:
    """The zsh script parses in a real zsh and its callback offers `config` for `gsv conf`."""
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed (.ci/run installs it)")
    script = ROOT / "completions" / "gsv.zsh"
    parsed = subprocess.run(["zsh", "-n", str(script)], capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
    env = {**_env(), "_TYPER_COMPLETE_ARGS": "gsv conf", "_GSV_COMPLETE": "complete_zsh"}
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "config" in done.stdout and "completions" not in done.stdout
