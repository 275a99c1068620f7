"""What counts as background spending is one rule (storage.usage.is_background), read by
the budget's check before a run and by the spend it sums: the two agree on every kind of
source, and compaction inside a cron job's or heartbeat's run is that run's background
spending."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsv_core.storage.db import Database
from gsv_core.storage.usage import UsageRow
from gsv_core.storage.usage import UsageStore
from gsv_core.storage.usage import is_background
from gsv_core.usage.ledger import compaction_source

SOURCES = {
    "chat": False, "channel:telegram": False, "compaction": False, "sessionSend": False,
    "cron:nightly": True, "heartbeat": True, "sessionSend@cron:nightly": True,
    "sessionSend@heartbeat": True, "compaction@cron:nightly": True,
    "compaction@heartbeat": True, "compaction@sessionSend@heartbeat": True,
    "heartbeats": False, "xcron:nightly": False, "compaction@chat": False,
}  # fmt: skip


@pytest.mark.parametrize(("source", "background"), SOURCES.items())
def test_python_reads_the_rule(source: str, background: bool) -> None:
    assert is_background(source) is background


async def test_the_spend_sums_exactly_what_the_rule_calls_background(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "gsv.db")
    try:
        store = UsageStore(db)
        for n, source in enumerate(SOURCES):
            cost = 2.0**n  # each source its own bit: the sum says which were counted
            await store.add(UsageRow(1000, "main", "k", source, "p", "m", 1, 1, 0, 0, cost))
        counted = await store.spent_since(0, background_only=True)
        expected = sum(2.0**n for n, source in enumerate(SOURCES) if is_background(source))
        assert counted == expected and counted > 0
    finally:
        await db.close()


@pytest.mark.parametrize(
    ("run_source", "recorded"),
    [("chat", "compaction"), ("channel:slack", "compaction"),
     ("cron:nightly", "compaction@cron:nightly"), ("heartbeat", "compaction@heartbeat")],
)  # fmt: skip
def test_compaction_in_a_background_run_is_recorded_as_its_spending(
    run_source: str, recorded: str
) -> None:
    assert compaction_source(run_source) == recorded
    assert is_background(compaction_source(run_source)) is is_background(run_source)
