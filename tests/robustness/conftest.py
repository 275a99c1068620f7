"""The robustness suite: hostile frames, fuzzing, runaway work and frozen peers, against
real gateways and node processes. Every test here also fails if anything logged an
error or a traceback while it ran (a gateway must answer junk, not crash on it)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


def troubles(records: list[logging.LogRecord]) -> list[str]:
    """The records that show something broke: any traceback, any error."""
    return [
        f"{record.name}: {record.getMessage()}"
        for record in records
        if record.exc_info is not None or record.levelno >= logging.ERROR
    ]


@pytest.fixture(autouse=True)
def nothing_broke(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    yield
    logged = caplog.get_records("setup") + caplog.get_records("call")
    assert troubles(logged) == []
