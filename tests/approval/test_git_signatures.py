"""Issue 37.3: checking a commit's signature runs `gpg.program`, which a repository's own
config may point anywhere (a cloned or unpacked tree). `git log --show-signature`, a `%G`
format and a branch listing with `%(signature)` ask, also under a rule for `git log`;
the line cannot turn `log.showSignature` on. Real git, in a repository whose gpg.program
is a script that leaves a marker."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from tests.approval.test_allowlist import home_secrets

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not on PATH")

# signs with a made-up signature; any other call (a verification) leaves the marker
FAKE_GPG = """#!/bin/sh
case "$*" in
  *-bsau*) cat >/dev/null
           echo "[GNUPG:] SIG_CREATED D 1 8 00 1 X" >&2
           printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nAAAA\\n-----END PGP SIGNATURE-----\\n' ;;
  *) cat >/dev/null; touch {marker} ;;
esac
"""
RUNS_GPG = [
    "git log --show-signature",
    "git show --show-signature",
    "git -C . --no-pager log -1 --show-signature --stat",
    "git log --format=%G?",
    "git log --pretty=format:%GS",
    "git log '--format=%+GK'",
    "git show -s '--pretty=tformat:%GG'",
    "git -c log.showSignature=true log",
]
RUNS_NO_GPG = [
    "git log",
    "git show",
    "git log --format=%H",
    "git log --no-show-signature",
    "git log -G x",
    "git log -- --show-signature",
    "git log --pretty=raw",
    "git blame README",
    "git branch -v",
]


@dataclass
class SignedRepo:
    path: Path
    marker: Path

    def run(self, line: str) -> bool:
        """Run `line` in the repository for real; whether it ran gpg.program."""
        self.marker.unlink(missing_ok=True)
        subprocess.run(["bash", "-c", line], cwd=self.path, capture_output=True, timeout=60,
                       env={**os.environ, "GIT_PAGER": "cat"})  # fmt: skip
        return self.marker.exists()


@pytest.fixture
def repo(tmp_path: Path) -> SignedRepo:
    """A repository with one signed commit whose config sets gpg.program to FAKE_GPG."""
    path, marker, gpg = tmp_path / "repo", tmp_path / "gpg-ran", tmp_path / "gpg"
    gpg.write_text(FAKE_GPG.format(marker=marker))
    gpg.chmod(gpg.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}  # fmt: skip
    path.mkdir()
    (path / "README").write_text("hello\n")
    for argv in (["init", "-q"], ["config", "gpg.program", str(gpg)], ["add", "README"],
                 ["commit", "-q", "-S", "-m", "signed"]):  # fmt: skip
        subprocess.run(["git", *argv], cwd=path, env=env, check=True, capture_output=True)
    return SignedRepo(path, marker)


def decide(line: str, **section: object) -> str:
    policy = ApprovalPolicy.from_config({"toolApproval": section}, home_secrets())
    return policy.decide(CallFacts("n__Bash", "Bash", "n", {"command": line}, "/ws")).verdict


@pytest.mark.parametrize("line", RUNS_GPG)
def test_checking_signatures_runs_the_repositorys_gpg_program_and_asks(
    repo: SignedRepo, line: str
) -> None:
    """Run for real, the line starts the gpg.program the repository names; it asks."""
    assert repo.run(line)
    assert decide(line) == "ask"


@pytest.mark.parametrize("line", RUNS_NO_GPG)
def test_reading_history_without_signatures_runs_unasked(repo: SignedRepo, line: str) -> None:
    """Logs, formats without `%G`, pickaxe `-G`, a path named like the option: no gpg."""
    assert not repo.run(line)
    assert decide(line) == "allow"


@pytest.mark.parametrize(
    "line", ["git log --show-signature", "git log --show-sig", "git log --format=%GS",
             "git show HEAD --show-signature", "git log -p '--pretty=%-G?'"],
)  # fmt: skip
def test_a_rule_for_git_log_does_not_cover_checking_signatures(line: str) -> None:
    """`always allow git log` (or `git show`) still asks before gpg runs."""
    assert decide(line, allow=["git log", "git show"]) == "ask"
    assert decide("git log --stat", allow=["git log"]) == "allow"


@pytest.mark.parametrize(
    "line",
    [
        "git -c log.showSignature=true log",
        "git --config-env=log.showSignature=X log",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=log.showSignature GIT_CONFIG_VALUE_0=true git log",
        "env GIT_CONFIG_PARAMETERS=\"'log.showsignature'='true'\" git log",
        "GIT_CONFIG_GLOBAL=./x git log",
        "HOME=. git log",
        "git branch --format='%(signature)'",
        "git branch --list --format '%(signature:grade)'",
    ],
)
def test_the_line_cannot_turn_signature_checks_on(line: str) -> None:
    """Command-scope config, another global config, a signature atom in a branch listing."""
    assert decide(line) == "ask"


def test_git_config_from_the_environment_turns_checks_on_for_real(repo: SignedRepo) -> None:
    """The control for the line above: `log.showSignature` from GIT_CONFIG_* runs gpg."""
    line = "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=log.showSignature GIT_CONFIG_VALUE_0=true git log"
    assert repo.run(line)


@pytest.mark.parametrize("line", ["git log --format=", "git log --", "git show --pretty=%",
                                  "git log --show-signature=", "git log '--format=%%G'"])  # fmt: skip
def test_odd_git_formats_are_judged_without_error(line: str) -> None:
    """Empty formats, a lone `%`, an escaped `%%G` (asks: read as a placeholder)."""
    assert decide(line) in ("allow", "ask")
