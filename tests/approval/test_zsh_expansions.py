"""zsh, which a node may run command lines in, has expansions that run code where bash
has none: `=(...)`, glob qualifiers `*(e:...:)`, `${(e)...}`. Each runs code for real
under zsh, and none runs unasked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.approval.test_help_operand import decide

LINES = [
    "echo =(touch {ran})",
    "ls *(e:'touch {ran}':)",
    "cat a.txt(e:'touch {ran}':)",
    "ls -d a*(.e{{'touch {ran}'}})",
    "print -r -- **/*(e:'touch {ran}':)",
    "echo ${{(e):-'$(touch {ran})'}}",
]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
@pytest.mark.parametrize("line", LINES)
def test_zsh_expansions_that_run_code_ask(tmp_path: Path, line: str) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    ran = tmp_path / "ran"
    command = line.format(ran=ran)
    subprocess.run(["zsh", "-fc", command], cwd=tmp_path, capture_output=True, timeout=30)
    assert ran.exists(), "zsh ran no code: the line tests nothing"
    assert decide(command, tmp_path) in ("ask", "deny"), command  # never unasked
