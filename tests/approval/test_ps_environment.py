"""Issue 37.3: `ps` with `e` among BSD options prints each process's environment -- a
gateway's provider keys. Each such line asks; run for real (procps) against a child
holding a key, it prints the key. `ps -e` (every process, UNIX style) and the everyday
forms still run, and print no key."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from gsv_core.approval.allowlist import PS_ENVIRONMENT
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from tests.approval.test_allowlist import home_secrets
from tests.conftest import PROVIDER_KEY

pytestmark = pytest.mark.skipif(shutil.which("ps") is None, reason="no ps on PATH")

# each prints the environment with procps-ng: BSD `e` in any position or cluster, and
# `-e` read again as BSD's `e` once procps meets a UNIX option it does not know
# (`-x`) or an attached argument it cannot read (`-uxe`)
PRINTING = [
    "ps eww -p {pid}",
    "ps axeww",
    "ps axe",
    "ps -p {pid} e",
    "ps p {pid} e",
    "ps ewwp {pid}",
    "ps e -p {pid}",
    "ps -ww -p {pid} -o args e",
    "ps --format args -p {pid} e",
    "ps o args e -p {pid}",
    "ps -q {pid} e",
    "ps --pid={pid} e",
    "ps --pid {pid} --cols 9999 e",
    "ps -p {pid} ue",
    "ps -p {pid} le",
    "ps -A e",
    "ps -axe",
    "ps -auxe",
    "ps -xe",
    "ps -ex",
    "ps -e -x",
    "ps -e -ax",
    "ps -ef -x",
    "ps -e -p {pid} -x",
    "ps -e -o args -x",
    "ps -e -uxe",
    "ps -e -u -xe",
]
# asks too, though procps prints nothing more: `-E` is macOS's and BSD's environment
# option, `--env` no ps's, and `ps e` shows only this terminal's processes
ASKING = ["ps e", "ps -E -p {pid}", "ps -p {pid} -E", "ps --env -p {pid}", "ps --e",
          "ps ouser e"]  # fmt: skip
# every process, full listings, user formats, selections: no environment
EVERYDAY = [
    "ps",
    "ps -e",
    "ps -ef",
    "ps -eF",
    "ps -ely",
    "ps -ejH",
    "ps -eLf",
    "ps -e --forest",
    "ps -eo pid,args",
    "ps -eopid,user,args",
    "ps -e -o pid,args",
    "ps -e x",
    "ps -e -u root",
    "ps aux",
    "ps axu",
    "ps axww",
    "ps -aux",
    "ps -ax",
    "ps -p {pid}",
    "ps {pid}",
    "ps -p {pid} -o user,args",
    "ps -ww -p {pid} -o args",
    "ps -q {pid} -o comm=",
    "ps --pid {pid} -o args",
    "ps -C sleep -o pid,args",
    "ps ax -o pid,user",
    "ps axo stat,euid,ruid,tty,comm",
    "ps -U root -u root u",
    "ps --sort=-pcpu -e -o pid,pcpu,args",
    "ps aux | grep sleep",
]


def decide(line: str, mode: str = "allowlist") -> tuple[str, str | None]:
    policy = ApprovalPolicy.from_config({"toolApproval": {"mode": mode}}, home_secrets())
    decided = policy.decide(CallFacts("n__Bash", "Bash", "n", {"command": line}, "/work/space"))
    return decided.verdict, decided.reason


def printed(line: str) -> str:
    """What ps prints, with lines as wide as `ww` would make them (without a terminal ps
    cuts them at 80 columns; the agent would add `ww`)."""
    env = {**os.environ, "COLUMNS": "4096"}
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60,
                          env=env)  # fmt: skip
    return done.stdout


@pytest.mark.parametrize("line", PRINTING)
def test_ps_showing_the_environment_asks(key_holder: int, line: str) -> None:
    """Run for real, the line prints the key holder's provider key; the gate asks."""
    line = line.format(pid=key_holder)
    assert PROVIDER_KEY in printed(line)
    assert decide(line) == ("ask", PS_ENVIRONMENT)


@pytest.mark.parametrize("line", ASKING)
def test_the_other_environment_options_ask(key_holder: int, line: str) -> None:
    """`-E` (macOS, BSD), `--env`, and `e` alone ask on every platform."""
    assert decide(line.format(pid=key_holder)) == ("ask", PS_ENVIRONMENT)


@pytest.mark.parametrize("line", EVERYDAY)
def test_everyday_ps_lines_run_and_print_no_environment(key_holder: int, line: str) -> None:
    """`ps -e` is every process, not the environment: unasked, and no key printed."""
    line = line.format(pid=key_holder)
    assert decide(line)[0] == "allow"
    assert PROVIDER_KEY not in printed(line)


@pytest.mark.parametrize(
    "line",
    ["echo e | xargs ps", "ps *", "PS_PERSONALITY=bsd ps -e", "env CMD_ENV=bsd ps -e",
     "I_WANT_A_BROKEN_PS=1 ps -e"],
)  # fmt: skip
def test_ps_given_words_nobody_has_seen_asks(line: str) -> None:
    """`xargs ps` may be given `e`, a pattern may match a file named `e`, and ps's
    personality variables make `-e` BSD's `e`."""
    assert decide(line)[0] == "ask"


def test_a_bsd_personality_makes_dash_e_the_environment(key_holder: int) -> None:
    """The control for the line above: with PS_PERSONALITY=bsd, `ps -e` prints the key."""
    assert PROVIDER_KEY in printed(f"PS_PERSONALITY=bsd ps -e -p {key_holder}")


@pytest.mark.parametrize("mode", ["denylist", "off"])
def test_outside_allowlist_mode_ps_follows_the_mode(mode: str) -> None:
    """As the issue says, `ps e` asks (in allowlist mode, and on the node): it is not one
    of gsv's secret files, so the weaker modes let it run as they let `env` run."""
    assert decide("ps eww", mode)[0] == "allow"


@pytest.mark.parametrize("line", ["ps -", "ps --", "ps -p", "ps --pid", "ps p", "ps -o", "ps ''"])
def test_malformed_ps_lines_are_read_without_error(line: str) -> None:
    """Missing arguments, a bare dash, an empty word: judged, not crashed on."""
    assert decide(line)[0] in ("allow", "ask")
