"""Issue 37.3: `/proc`, a process's folder (`/proc/PID`, `self`, `thread-self`) and its
threads' folders hold every process's `environ`, `mem`, `fd/` and `cwd`: a program that
reads a folder's contents (`grep -r`, `rg`, `diff -r`, `tar`, `cp -r`) reads those too, so
they are folders above gsv's secrets, refused in every mode. Proven for real against a
child holding a provider key; the ordinary reads of /proc still run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from tests.approval.test_allowlist import home_secrets
from tests.conftest import PROVIDER_KEY

MODES = ["allowlist", "denylist", "off"]
# the lines, and their neighbours: a process's folder, its threads, /proc itself,
# as patterns, from a working directory in /proc, through other programs
READERS = [
    "grep -Ra -o 'sk-ant-[A-Z]*' /proc/{pid}",
    "grep -ra --include=environ KEY /proc",
    "rg -a -L KEY /proc/{pid}",
    "diff -r /proc/{pid} /dev/null",
    "grep -r KEY /proc/self",
    "grep -r KEY /proc/thread-self/",
    "grep -r KEY /proc/{pid}/task/{pid}",
    "grep -r KEY /proc/{pid}/task",
    "grep -r KEY /proc//{pid}/./",
    "grep -r KEY /proc/*",
    "grep -r KEY /proc/[0-9]*",
    "grep -r KEY /proc/{pid}/task/*",
    "grep -r KEY /pr?c/s*",
    "grep -r KEY /p*",
    "cd /proc && grep -r KEY .",
    "cd /proc/{pid} && rg KEY",
    "tar czf - /proc/{pid}",
    "cp -r /proc/self x",
    "zip -r x.zip /proc/{pid}",
    "find /proc/{pid} -type f -exec cat {{}} +",
    "cat /proc/{pid}/task/{pid}/environ",
]
# a `..` after a /proc link climbs from where the link leads: `/proc/net` is `self/net`,
# `/proc/thread-self` is `PID/task/TID`, a process's `cwd` is its working directory
CLIMBERS = [
    "cat /proc/net/../environ",
    "cat /proc/n*/../environ",
    "cat /proc/thread-self/../../environ",
    "cat /proc/*/../../environ",
    "cat /proc/self/cwd/../{home}/.config/gsv/config.toml",
    "cat /proc/*/../../{home}/.config/gsv/config.toml",
    "cat /pr?c/self/r??t/../{home}/.config/gsv/config.toml",
]
# what /proc tells without a secret: lists, a process's status, the machine's figures
ORDINARY = [
    "ls /proc",
    "ls -la /proc/{pid}",
    "ps",
    "cat /proc/cpuinfo",
    "cat /proc/meminfo",
    "cat /proc/self/status",
    "cat /proc/{pid}/status",
    "head -3 /proc/{pid}/task/{pid}/status",
    "cat /proc/net/dev",
    "find /proc -maxdepth 2 -name environ",
    "cat /proc/self/../{pid}/comm",
]


def decide(line: str, mode: str = "allowlist", tool: str = "Bash") -> str:
    policy = ApprovalPolicy.from_config({"toolApproval": {"mode": mode}}, home_secrets())
    args = {"command": line} if tool == "Bash" else {"path": line}
    return policy.decide(CallFacts(f"n__{tool}", tool, "n", args, "/work/space")).verdict


def run(line: str, cwd: Path) -> str:
    """What bash prints running `line` in `cwd`, NUL bytes as newlines."""
    done = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, timeout=60)
    return (done.stdout + done.stderr).decode(errors="replace").replace("\0", "\n")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("line", READERS)
def test_reading_the_contents_of_a_process_folder_is_refused(
    key_holder: int, line: str, mode: str
) -> None:
    """Every mode refuses a content reader given /proc or a folder of a process or thread."""
    assert decide(line.format(pid=key_holder), mode) == "deny"


@pytest.mark.parametrize(
    "line",
    [
        "grep -ra --include=environ -o 'sk-ant-[A-Z]*' /proc/{pid}",
        "grep -ra --include=environ -o 'sk-ant-[A-Z]*' /proc",
        "rg -a -o 'sk-ant-[A-Z]*' /proc/{pid}",
        "cd /proc/{pid}/task && rg -a -o 'sk-ant-[A-Z]*'",
    ],
)
def test_the_folder_readers_leak_for_real(key_holder: int, line: str, tmp_path: Path) -> None:
    """Run for real, the lines print the key holder's provider key; the gate refuses them."""
    line = line.format(pid=key_holder)
    assert PROVIDER_KEY in run(line, tmp_path)
    assert decide(line) == "deny"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("line", CLIMBERS)
def test_climbing_out_of_a_proc_link_is_refused(line: str, mode: str) -> None:
    """`..` after `/proc/net`, `/proc/thread-self` or a process's `cwd` (or a pattern that
    may name one) is not read as the path written with it removed."""
    home = home_secrets().secret_paths
    config = next(p for p in home if p.endswith("config.toml"))
    line = line.replace("{home}/.config/gsv/config.toml", config.lstrip("/"))
    assert decide(line, mode) == "deny"


def test_a_climb_out_of_proc_links_reads_the_environment_for_real(tmp_path: Path) -> None:
    """`cat /proc/net/../environ` and `cat /proc/thread-self/../../environ` print the
    reader's own environment (here holding the key)."""
    for line in ("cat /proc/net/../environ", "cat /proc/thread-self/../../environ"):
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True,
                              timeout=60, env={"ANTHROPIC_API_KEY": PROVIDER_KEY})  # fmt: skip
        assert PROVIDER_KEY.encode() in done.stdout, line


def test_the_file_tools_are_refused_the_same_folders(key_holder: int) -> None:
    """Grep with a process's folder as its path, Read of a climb out of a link."""
    for path in (f"/proc/{key_holder}", "/proc", "/proc/self/task"):
        assert decide(path, tool="Grep") == "deny", path
    assert decide("/proc/net/../environ", tool="Read") == "deny"
    assert decide("/proc/cpuinfo", tool="Read") == "allow"


@pytest.mark.parametrize("line", ORDINARY)
def test_what_proc_tells_without_a_secret_still_runs(
    key_holder: int, line: str, tmp_path: Path
) -> None:
    """Lists, names, a status file, the machine's figures: unasked, and run for real they
    print no key."""
    line = line.format(pid=key_holder)
    assert decide(line) == "allow"
    assert PROVIDER_KEY not in run(line, tmp_path)


@pytest.mark.parametrize(
    "line",
    ["grep -r KEY /proc/sys/kernel", "grep -r KEY /proc/net", "grep -r KEY /proc/driver",
     "grep -r KEY /proc/s[!e]*", "du -s /proc/self/fdinfo", "grep -r KEY /procfoo"],
)  # fmt: skip
def test_folders_of_proc_without_a_process_are_not_above_one(line: str) -> None:
    """`/proc/sys`, `/proc/net` (`self/net`: no environ in it), a pattern that names no
    process, a sibling of /proc: no process's entries below them."""
    assert decide(line) == "allow"
