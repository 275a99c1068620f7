"""Choosing a sandbox: `off` is none, `auto` takes what works and otherwise says why and
how to fix it, a named backend that cannot run stops the node, a bad mode is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.node.sandbox import SandboxPolicy
from gsv_core.node.sandbox import SandboxUnavailable
from gsv_core.node.sandbox import choose_sandbox
from gsv_core.node.sandbox.bwrap import BwrapSandbox
from gsv_core.node.sandbox.seatbelt import SeatbeltSandbox
from tests.node.sandbox.conftest import needs_bwrap


def policy(tmp_path: Path) -> SandboxPolicy:
    return SandboxPolicy(workspace=str(tmp_path))


def test_off_means_no_sandbox_and_says_so(tmp_path: Path) -> None:
    sandbox = choose_sandbox("off", policy(tmp_path), "linux")
    assert not sandbox.active and sandbox.wrap(["true"], "/") == ["true"]
    assert sandbox.describe() == {
        "backend": "none",
        "network": True,
        "reason": "turned off (node.sandbox = off)",
    }


@needs_bwrap
def test_auto_on_linux_is_bubblewrap(tmp_path: Path) -> None:
    sandbox = choose_sandbox("auto", policy(tmp_path), "linux")
    assert isinstance(sandbox, BwrapSandbox)
    assert sandbox.describe() == {"backend": "bwrap", "network": False}


def test_auto_without_bubblewrap_runs_unconfined_and_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    sandbox = choose_sandbox("auto", policy(tmp_path), "linux")
    assert not sandbox.active
    reason = sandbox.describe()["reason"]
    assert "not installed" in reason and "apt install bubblewrap" in reason


def test_a_named_backend_that_cannot_run_stops_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap .* is not installed"):
        choose_sandbox("bwrap", policy(tmp_path), "linux")


def test_a_bwrap_that_cannot_make_namespaces_is_reported_with_its_own_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed is not enough (a container forbidding user namespaces): the probe's
    error is the reason, and auto falls back to no sandbox."""
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    sandbox = choose_sandbox("auto", policy(tmp_path), "linux")
    assert not sandbox.active
    assert "No permissions to creating new namespace" in sandbox.describe()["reason"]
    with pytest.raises(SandboxUnavailable, match="user namespaces"):
        choose_sandbox("bwrap", policy(tmp_path), "linux")


def test_windows_has_no_backend(tmp_path: Path) -> None:
    sandbox = choose_sandbox("auto", policy(tmp_path), "windows")
    assert not sandbox.active and "windows" in sandbox.describe()["reason"]


def test_seatbelt_is_macos_only_and_a_bad_mode_is_refused(tmp_path: Path) -> None:
    if Path("/usr/bin/sandbox-exec").exists():
        assert isinstance(choose_sandbox("seatbelt", policy(tmp_path)), SeatbeltSandbox)
    else:
        with pytest.raises(SandboxUnavailable, match="sandbox-exec is missing"):
            choose_sandbox("seatbelt", policy(tmp_path), "darwin")
    with pytest.raises(SandboxUnavailable, match="must be one of auto, bwrap, seatbelt, off"):
        choose_sandbox("firejail", policy(tmp_path))
