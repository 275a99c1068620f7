"""Ids by unique prefix (gsv_cli.ids): exact, unique prefix, ambiguous, unknown."""

from __future__ import annotations

import pytest
import typer

from gsv_cli.ids import resolve_prefix

IDS = ["3f2a91", "3f2b07", "a1b2c3"]


def test_an_exact_id_or_a_unique_prefix_resolves() -> None:
    assert resolve_prefix("3f2b07", IDS, "job") == "3f2b07"
    assert resolve_prefix("a1", IDS, "job") == "a1b2c3"
    assert resolve_prefix("3f2a", IDS, "job") == "3f2a91"


@pytest.mark.parametrize(("given", "said"), [("3f", "is the start of 2 job ids: 3f2a91, 3f2b07"),
                                             ("zz", "no job with an id starting 'zz'"),
                                             ("", "no job with an id starting ''")])  # fmt: skip
def test_an_ambiguous_or_unknown_prefix_exits_1_saying_why(
    given: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as stopped:
        resolve_prefix(given, IDS, "job")
    assert stopped.value.exit_code == 1
    assert said in capsys.readouterr().err
