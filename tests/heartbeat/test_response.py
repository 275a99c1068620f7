"""Which heartbeat replies reach a person: only an exact HEARTBEAT_OK is held back."""

from __future__ import annotations

import pytest

from gsv_core.heartbeat.response import ACKNOWLEDGED
from gsv_core.heartbeat.response import DUPLICATE
from gsv_core.heartbeat.response import DUPLICATE_WINDOW_MS
from gsv_core.heartbeat.response import EMPTY_REPLY
from gsv_core.heartbeat.response import held_back

NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("HEARTBEAT_OK", ACKNOWLEDGED),
        ("  HEARTBEAT_OK\n", ACKNOWLEDGED),
        ("", EMPTY_REPLY),
        ("  \n", EMPTY_REPLY),
        ("The backup failed.", None),
        ("Disk full", None),  # short alerts are delivered (the original kept them back)
        ("HEARTBEAT_OK but the disk is 95% full", None),
        ("The disk is full. HEARTBEAT_OK", None),
        ("heartbeat_ok", None),
        ("HEARTBEAT_OK.", None),
    ],
)
def test_only_an_exact_acknowledgement_is_held_back(reply: str, reason: str | None) -> None:
    """HEARTBEAT_OK alone (trimmed) is held back; any other text is delivered."""
    assert held_back(reply, None, None, NOW) == reason


def test_the_same_alert_is_not_repeated_within_a_day() -> None:
    """A text delivered less than 24 h ago is held back; later, or different, it goes."""
    sent = NOW - DUPLICATE_WINDOW_MS + 1
    assert held_back("Disk full", "Disk full", sent, NOW) == DUPLICATE
    assert held_back(" Disk full ", "Disk full", sent, NOW) == DUPLICATE
    assert held_back("Disk fuller", "Disk full", sent, NOW) is None
    assert held_back("Disk full", "Disk full", NOW - DUPLICATE_WINDOW_MS, NOW) is None
