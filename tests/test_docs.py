"""docs/protocol.md stays true to gsv_core.protocol and gsv_core.errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gsv_core import errors
from gsv_core.protocol import events
from gsv_core.protocol.methods import METHODS

DOC = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text()


def _section(title: str) -> str:
    return DOC.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _table_rows(section: str, first_cell: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in _section(section).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(first_cell, cells[0]) if cells else None
        if line.startswith("|") and match:
            rows[match.group(1)] = cells[1:]
    return rows


def test_every_method_is_documented_with_its_modes() -> None:
    """Each protocol method has a row in the methods table naming exactly its modes."""
    rows = _table_rows("Methods", r"`([a-z.]+)`")
    for name, spec in METHODS.items():
        assert name in rows, f"{name} is missing from docs/protocol.md"
        documented = rows[name][0]
        if spec.needs_connect:
            assert {m.strip() for m in documented.split(",")} == set(spec.modes), name
        else:
            assert documented == "before connect", name


def test_every_event_is_documented() -> None:
    """Each event constant has a row in the events table."""
    rows = _table_rows("Events", r"`([a-z.]+)`")
    for name in events.EVENTS:
        assert name in rows, f"event {name} is missing from docs/protocol.md"


@pytest.mark.parametrize("cls", [c for c in vars(errors).values() if isinstance(c, type)
                                 and issubclass(c, errors.GsvError) and c is not errors.GsvError
                                 and c.__base__ is errors.GsvError])  # fmt: skip
def test_every_error_code_is_documented(cls: type[errors.GsvError]) -> None:
    """Each wire code of the error tree has a row with its class."""
    rows = _table_rows("Error codes", r"(\d{3})")
    assert str(cls.code) in rows
    assert rows[str(cls.code)][0] == f"`{cls.__name__}`"
