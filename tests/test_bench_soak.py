"""bench.soak's flags: bad values stop it with a usage error naming the flag; the
baseline turn is 2,000, or a tenth of a shorter run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any
from typing import cast

import pytest

from bench.soak import MB
from bench.soak import Sample
from bench.soak import Soak
from bench.soak import judge
from bench.soak import parse_plan
from gsv_core.errors import ConnectionClosed


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--minutes", "0"], "--minutes"),
        (["--minutes", "-5"], "--minutes"),
        (["--turns", "10"], "--turns"),
        (["--turns", "many"], "--turns"),
        (["--sessions", "0"], "--sessions"),
        (["--every", "0.5"], "--every"),
    ],
)
def test_bad_flags_are_refused(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_plan(argv)
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err


def test_the_default_the_quick_and_a_short_plan() -> None:
    default = parse_plan([])
    assert (default.minutes, default.turns, default.sessions) == (10.0, 20_000, 500)
    assert default.baseline_turn == 2000
    quick = parse_plan(["--quick"])
    assert quick.minutes == 1.0 and quick.baseline_turn == quick.turns // 10
    assert parse_plan(["--turns", "500"]).baseline_turn == 50


class _Client:
    """What a soak turn calls: fails as `error` says."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def call(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        raise self.error


def _soak() -> Soak:
    node = cast(Any, SimpleNamespace(reconnects=0))  # what the verdict reads of the node
    run = Soak(parse_plan([]), 0, Path("unused"), None, None, node, cast(Any, None))
    run.running.set()
    return run


async def test_a_closed_connection_stops_the_soak_and_other_failures_do_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A closed connection would fail every later turn at once (tens of thousands of
    lines): the soak stops, saying so once. Another failure is counted and it goes on."""
    run = _soak()
    await run.turn(_Client(TimeoutError("slow")), "chat.send", {}, "a")
    assert run.lost is None and not run.done() and run.failed == 1
    closed = _Client(ConnectionClosed("not connected to the gateway"))
    await run.turn(closed, "chat.send", {}, "b")
    await run.turn(closed, "chat.send", {}, "c")
    assert run.lost == "not connected to the gateway" and run.done() and run.failed == 3
    said = capsys.readouterr().out
    assert said.count("the soak stops") == 1 and said.count("turn failed") == 1
    assert run.waiting == {} and run.in_flight == 0


def test_a_failed_turn_fails_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    run = _soak()
    sample = Sample(at=1.0, turns=10, rss=100 * MB, fds=20, tasks=19, database=1, wal=0)
    assert judge(run, sample, sample, sample) == 0
    run.failed = 1
    assert judge(run, sample, sample, sample) == 1
    assert "FAIL every turn answered" in " ".join(capsys.readouterr().out.split())
