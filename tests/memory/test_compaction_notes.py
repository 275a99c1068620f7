"""Nothing is forgotten at compaction: through a real gateway and a scripted model, a
fact from an early turn survives two compactions (the second summary drops it) and the
agent still finds it with gsv__MemorySearch, in the archived transcript and in the note
the gateway wrote to the day's memory file, whose ref gsv__MemoryGet opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gsv_core.agent.compaction import SUMMARISER_SYSTEM
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.agent.test_compaction import small_window
from tests.fakes.provider import FakeProvider
from tests.memory.test_memory_tools import owner_calls

FACT = "My bike locker code is 4417."
REMEMBERS = "<summary>The user's bike locker code is 4417.</summary><memories></memories>"
FORGETS = "<summary>They chatted about the weather.</summary>"


def compactions(log: EventLog) -> list[dict[str, Any]]:
    return [p for n, p in log.events if n == "session.notice" and p["kind"] == "compaction"]


async def chat(client: GatewayClient, log: EventLog, text: str) -> None:
    assert (await log.ended((await send(client, text))["runId"]))["state"] == "final"


async def test_a_fact_survives_two_compactions_in_the_archive_and_the_note(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Turn 3's fact is found as an archived message and in the compaction note, whose
    transcript ref opens the archived conversation; the notices name the note's file."""
    await small_window(client)
    fake.by_system[SUMMARISER_SYSTEM] = [REMEMBERS]
    for text in ("hello", "how are you", FACT):
        await chat(client, log, text)
    turn = 0
    while len(compactions(log)) < 2:
        turn += 1
        assert turn <= 12, "two compactions never came"
        if compactions(log):
            fake.by_system[SUMMARISER_SYSTEM] = [FORGETS]
        await chat(client, log, f"weather report {turn}: " + "sunny " * 150)
    first, second = compactions(log)[:2]
    day_file = first["details"]["notedIn"]
    assert day_file.startswith("memory/") and f"written to {day_file}" in first["text"]
    folder = Path(gw.gateway.db.path).parent / "workspace/agents/main"
    files = {day_file, second["details"]["notedIn"]}  # two days if midnight came between
    notes = "".join((folder / name).read_text() for name in sorted(files))
    assert notes.count("### Compaction of agent:main:main") == 2 and "4417" in notes

    found = await owner_calls(client, log, fake, "gsv__MemorySearch", {"query": "locker code"})
    hits = found["results"]
    archived = [h for h in hits if h.get("archived") and "4417" in h["snippet"]]
    assert archived and archived[0]["archive"].startswith("sessions/")
    [note] = [h for h in hits if h.get("path") == day_file]
    assert "4417" in note["snippet"]
    ref = notes.split("gsv__MemoryGet ref `", 1)[1].split("`", 1)[0]
    opened = await owner_calls(client, log, fake, "gsv__MemoryGet", {"ref": ref, "after": 5})
    assert opened["archived"] and any(FACT in p["text"] for p in opened["pieces"])


async def test_without_extract_memories_no_note_is_written(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """compaction.extractMemories false: the archive is written, the day file is not."""
    await small_window(client)
    await client.call("config.set", {"path": "compaction.extractMemories", "value": False})
    fake.by_system[SUMMARISER_SYSTEM] = [REMEMBERS]
    turn = 0
    while not compactions(log):
        turn += 1
        assert turn <= 12, "no compaction came"
        await chat(client, log, f"weather report {turn}: " + "sunny " * 150)
    [notice] = compactions(log)
    assert "notedIn" not in notice["details"] and notice["details"]["archivedTo"]
    assert not list((Path(gw.gateway.db.path).parent / "workspace").rglob("memory/*.md"))


async def test_a_messenger_conversation_is_not_written_to_the_owners_notes(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """A per-peer DM (or a group) may hold a stranger's words, and the daily notes reach
    the main session's prompt every turn: its compaction is archived, not noted."""
    await client.call("config.set", {"path": "session.dmScope", "value": "per-channel-peer"})
    dm = "agent:main:telegram:dm:5550001"
    await small_window(client)
    fake.by_system[SUMMARISER_SYSTEM] = [REMEMBERS]
    turn = 0
    while not compactions(log):
        turn += 1
        assert turn <= 12, "no compaction came"
        text = f"weather report {turn}: " + "sunny " * 150
        assert (await log.ended((await send(client, text, dm))["runId"]))["state"] == "final"
    [notice] = compactions(log)
    assert notice["sessionKey"] == dm and notice["details"]["archivedTo"]
    assert "notedIn" not in notice["details"] and "written to" not in notice["text"]
    assert not list((Path(gw.gateway.db.path).parent / "workspace").rglob("memory/*.md"))
