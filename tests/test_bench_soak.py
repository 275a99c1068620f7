"""bench.soak's flags: bad values stop it with a usage error naming the flag; the
baseline turn is 2,000, or a tenth of a shorter run."""

from __future__ import annotations

import pytest

from bench.soak import parse_plan


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
