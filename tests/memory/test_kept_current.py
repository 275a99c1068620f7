"""A real gateway keeps the memory index current: chat messages as they are stored, a
reset's and a compaction's archives, notes written through the workspace methods."""

from __future__ import annotations

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.memory.query import query_terms
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import SearchRequest
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider


async def hits(gw: RunningGateway, text: str) -> list[dict]:
    request = SearchRequest(query_terms(text), limit=20)
    return await gw.gateway.memory.search(request, MemoryScope.everything())


async def chat(client: GatewayClient, log: EventLog, text: str) -> None:
    run_id = (await send(client, text))["runId"]
    assert (await log.ended(run_id))["state"] == "final"


async def test_a_reset_session_is_still_found_in_its_archive(
    gw: RunningGateway, client: GatewayClient, fake: FakeProvider, log: EventLog
) -> None:
    """Both sides of the chat are indexed; after a reset they are archived hits."""
    fake.enqueue("Noted: the wifi password is on the fridge.")
    await chat(client, log, "where is the wifi password?")
    assert {(h["role"], h["archived"]) for h in await hits(gw, "wifi")} == {
        ("user", False), ("assistant", False)}  # fmt: skip
    await client.call("session.reset", {"sessionKey": KEY})
    found = await hits(gw, "wifi")
    assert len(found) == 2
    assert all(h["archived"] and h["archive"].startswith("sessions/") for h in found)


async def test_compaction_archives_the_old_part_once(
    gw: RunningGateway, client: GatewayClient, log: EventLog
) -> None:
    """After compaction every message is one hit: archived if cut, live if kept."""
    for word in ("apricot", "banana", "cherry"):
        await chat(client, log, f"fruit {word}")
    await client.call("session.compact", {"sessionKey": KEY, "keepMessages": 2})
    found = await hits(gw, "fruit")
    assert len(found) == 3
    assert sorted(h["archived"] for h in found) == [False, True, True]


async def test_a_note_written_through_the_workspace_is_found(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """workspace.write of a memory file is searchable at once; other files are not notes."""
    await client.call("workspace.write", {"path": "memory/people.md", "content": "Dana: dentist"})
    await client.call("workspace.write", {"path": "src/dentist.txt", "content": "dentist"})
    [hit] = await hits(gw, "dentist")
    assert hit["path"] == "memory/people.md"
    await client.call("workspace.delete", {"path": "memory/people.md"})
    assert await hits(gw, "dentist") == []


async def test_appends_and_edits_through_the_workspace_are_found(gw: RunningGateway) -> None:
    """What compaction appends to the day's memory file, and an edit of it, are searchable."""
    workspace = gw.gateway.workspace
    await workspace.append("main", "memory/2026-01-02.md", "### Extracted\n\nlikes marzipan\n")
    [hit] = await hits(gw, "marzipan")
    assert hit["path"] == "memory/2026-01-02.md"
    await workspace.edit("main", "memory/2026-01-02.md", "marzipan", "nougat")
    assert await hits(gw, "marzipan") == []
    assert len(await hits(gw, "nougat")) == 1
