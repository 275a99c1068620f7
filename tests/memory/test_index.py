"""The memory index over real SQLite files: messages as they are stored, archives after
reset and compaction, notes as they change, the background build, scopes, bad refs."""

from __future__ import annotations

import gzip
import json
import os
from typing import Any

import pytest

from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.memory.query import query_terms
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import SearchRequest
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.sessions import SessionStore
from tests.memory.conftest import Memory
from tests.memory.conftest import message

ALL = MemoryScope.everything()


async def find(memory: Memory, text: str, scope: MemoryScope = ALL, **kw: Any) -> list[dict]:
    return await memory.service.search(SearchRequest(query_terms(text), **kw), scope)


async def test_stored_messages_are_found_with_where_they_came_from(memory: Memory) -> None:
    """A user message is a hit naming its session, index, time and that it is live."""
    await memory.say("agent:main:main", "hello", "the plumber comes on Thursday", at=5000)
    [hit] = await find(memory, "plumber")
    assert hit["sessionKey"] == "agent:main:main"
    assert hit["messageIndex"] == 1
    assert hit["at"] == 5001
    assert hit["archived"] is False
    assert "**plumber**" in hit["snippet"]


async def test_tool_traffic_is_not_indexed(memory: Memory) -> None:
    """Tool results hold files and command output, not what was said."""
    record = SessionRecord("k", "s", "main", "main", 0, 0, 0)
    result = {"role": "toolResult", "toolCallId": "c", "toolName": "x",
              "content": [{"type": "text", "text": "zebra output"}], "isError": False}  # fmt: skip
    await memory.store.append(record, [result])
    assert await find(memory, "zebra") == []


async def test_reset_keeps_the_words_as_archived_hits(memory: Memory) -> None:
    """After a reset the old messages are hits from their archive, not live ones."""
    key = "agent:main:main"
    await memory.say(key, "my passport number ends in 4471")
    old = await memory.store.messages(key)
    await memory.service.archived("main", "sessions/s1.jsonl.gz", old, {"sessionKey": key})
    await memory.store.replace_history(SessionRecord(key, "s2", "main", "main", 0, 0, 0), [])
    [hit] = await find(memory, "passport")
    assert hit["archived"] is True
    assert hit["archive"] == "sessions/s1.jsonl.gz"


async def test_compaction_leaves_one_hit_per_message(memory: Memory) -> None:
    """What compaction keeps stays live; what it archives is archived; nothing twice."""
    key = "agent:main:main"
    await memory.say(key, "alpha kiwi", "beta kiwi", "gamma kiwi")
    history = await memory.store.messages(key)
    await memory.service.archived(
        "main", "sessions/s-part1.jsonl.gz", history[:2], {"sessionKey": key}
    )
    record = SessionRecord(key, "s", "main", "main", 0, 0, 0)
    await memory.store.replace_history(record, [message("user", "summary"), history[2]])
    hits = await find(memory, "kiwi", limit=10)
    assert sorted((h["snippet"].split()[0], h["archived"]) for h in hits) == [
        ("alpha", True), ("beta", True), ("gamma", False)]  # fmt: skip


async def test_an_archive_is_indexed_once(memory: Memory) -> None:
    """Writing the same archive again adds nothing."""
    for _ in range(2):
        await memory.service.archived("main", "sessions/a.jsonl.gz", [message("user", "once")], {})
    assert len(await find(memory, "once")) == 1


async def test_notes_are_found_by_file_and_lines(memory: Memory) -> None:
    """MEMORY.md and memory/**/*.md chunks say their file and line range."""
    memory.note(
        "MEMORY.md", "# Family\n\nSister Ada lives in Lyon.\n\n# Work\n\nStandup at nine.\n"
    )
    memory.note("memory/2026/trips.md", "Flight to Oslo on the fifth.\n")
    memory.note("other.md", "Lyon is not a note here.\n")
    hits = await find(memory, "Lyon")
    assert [(h["path"], h["lines"]) for h in hits] == [("MEMORY.md", [1, 4])]
    [trip] = await find(memory, "Oslo")
    assert trip["path"] == "memory/2026/trips.md"
    assert trip["source"] == "note"


async def test_an_edit_on_disk_is_noticed_at_the_next_search(memory: Memory) -> None:
    """A changed or deleted note is indexed again when searched."""
    path = memory.note("USER.md", "Likes tea.\n")
    assert len(await find(memory, "tea")) == 1
    path.write_text("Likes strong coffee now.\n")
    assert await find(memory, "tea") == []
    assert len(await find(memory, "coffee")) == 1
    path.unlink()
    assert await find(memory, "coffee") == []


async def test_a_write_through_gsv_is_noticed_even_with_the_same_stat(memory: Memory) -> None:
    """A write marked by the workspace is indexed again though mtime and size match."""
    path = memory.note("MEMORY.md", "cat\n")
    await find(memory, "cat")
    stat = path.stat()
    path.write_text("dog\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    memory.service.file_changed("main", "MEMORY.md")
    memory.service.file_changed("main", "src/app.py")  # not a note: ignored
    assert len(await find(memory, "dog")) == 1


async def test_extra_notes_from_config_are_indexed(tmp_path: Any, memory: Memory) -> None:
    """Paths and patterns in memory.notes are notes too."""
    service = memory.service
    service._extra_notes = lambda: ["journal/*.txt", "TODO.md"]
    memory.note("journal/mon.txt", "ran ten kilometres\n")
    memory.note("TODO.md", "renew the kilometres pass\n")
    assert {h["path"] for h in await find(memory, "kilometres")} == {"journal/mon.txt", "TODO.md"}


async def test_the_background_build_indexes_an_older_install(memory: Memory) -> None:
    """History stored before the index existed, and archive files, are indexed once."""
    plain = SessionStore(memory.db)  # no index: as before this feature
    await plain.append(SessionRecord("agent:main:dm:bob", "s", "main", "dm", 0, 0, 0),
                       [message("user", "bob's llama is called Pedro")])  # fmt: skip
    archive = memory.workspace / "agents/main/sessions/old.jsonl.gz"
    archive.parent.mkdir(parents=True)
    lines = [{"meta": {"sessionKey": "agent:main:main"}}, message("user", "pedro the llama")]
    archive.write_bytes(gzip.compress("\n".join(map(json.dumps, lines)).encode()))
    (memory.workspace / "agents/main/sessions/broken.jsonl.gz").write_bytes(b"junk")
    await memory.service.start()
    await memory.service.wait_built()
    status = await memory.service.status()
    assert (status["state"], status["done"], status["total"]) == ("ready", 3, 3)
    assert status["messages"] == 2 and status["archivedMessages"] == 1
    hits = await find(memory, "llama")
    assert {(h["sessionKey"], h["archived"]) for h in hits} == {
        ("agent:main:dm:bob", False), ("agent:main:main", True)}  # fmt: skip
    await memory.service.start()  # built: nothing runs again
    await memory.service.wait_built()
    assert len(await find(memory, "llama")) == 2


async def test_reindex_rebuilds_the_same_index(memory: Memory) -> None:
    """reindex forgets everything and finds the same again."""
    await memory.say("k1", "quince jam recipe")
    memory.note("MEMORY.md", "quince tree in the garden\n")
    before = len(await find(memory, "quince"))
    status = await memory.service.reindex()
    assert status["state"] == "building"
    await memory.service.wait_built()
    assert len(await find(memory, "quince")) == before == 2


async def test_a_conversation_scope_sees_its_own_session_only(memory: Memory) -> None:
    """No notes, no other session, and refs outside the scope are not found."""
    await memory.say("agent:main:dm:bob", "bob likes mangoes")
    await memory.say("agent:main:main", "owner likes mangoes too")
    memory.note("MEMORY.md", "mangoes are the owner's favourite\n")
    bob = MemoryScope.conversation("agent:main:dm:bob")
    hits = await find(memory, "mangoes", bob)
    assert [h["sessionKey"] for h in hits] == ["agent:main:dm:bob"]
    assert await find(memory, "mangoes", bob, kind="notes") == []
    assert await find(memory, "mangoes", MemoryScope.conversation()) == []
    owner_hits = await find(memory, "mangoes")
    assert len(owner_hits) == 3
    for hit in owner_hits:
        if hit.get("sessionKey") != "agent:main:dm:bob":
            with pytest.raises(NotFound):
                await memory.service.around(hit["ref"], 1, 1, bob)


async def test_time_bounds_filter_hits(memory: Memory) -> None:
    """since and until compare with the message's time."""
    await memory.say("k", "old walnut", at=1_000)
    await memory.say("k", "new walnut", at=9_000)
    hits = await find(memory, "walnut", since=5_000)
    assert [h["snippet"] for h in hits] == ["new **walnut**"]
    hits = await find(memory, "walnut", until=5_000)
    assert [h["snippet"] for h in hits] == ["old **walnut**"]


async def test_around_reads_the_messages_next_to_a_hit(memory: Memory) -> None:
    """Pieces before and after the hit, in order, the hit marked."""
    await memory.say("k", "one", "two", "three pineapple", "four", "five")
    [hit] = await find(memory, "pineapple")
    found = await memory.service.around(hit["ref"], 1, 2, ALL)
    assert [p["text"] for p in found["pieces"]] == ["two", "three pineapple", "four", "five"]
    assert [p.get("hit", False) for p in found["pieces"]] == [False, True, False, False]


@pytest.mark.parametrize("ref", ["", "42", "x:1", "m:", "m:abc", "m:1:2", "n:-1", "m:" + "9" * 30])
async def test_a_bad_ref_is_refused(memory: Memory, ref: str) -> None:
    """Anything but a ref a search returned is a 400 that says what a ref looks like."""
    with pytest.raises(InvalidParams, match="not a memory ref"):
        await memory.service.around(ref, 1, 1, ALL)


async def test_a_ref_of_the_wrong_kind_or_gone_is_not_found(memory: Memory) -> None:
    """A message ref read as a note (or a ref reindexed away) is a 404."""
    await memory.say("k", "lemon")
    [hit] = await find(memory, "lemon")
    with pytest.raises(NotFound):
        await memory.service.around("n" + hit["ref"][1:], 1, 1, ALL)
    with pytest.raises(NotFound):
        await memory.service.around("m:999999", 1, 1, ALL)


@pytest.mark.parametrize(
    "text", ['say "hi', "a - b", "col:umn", "NEAR(x y)", "x AND OR NOT", "star*", "(((x", "{a} [b]"]
)
async def test_fts_syntax_in_a_query_runs_as_words(memory: Memory, text: str) -> None:
    """Text that would be FTS5 syntax searches as plain words against SQLite."""
    await memory.say("k", "say hi col umn star x a b NEAR not")
    assert len(await find(memory, text)) == 1


async def test_a_symlink_under_memory_is_not_followed(memory: Memory, tmp_path: Any) -> None:
    """A link out of the workspace is no note, whatever it points at."""
    outside = tmp_path / "secret.md"
    outside.write_text("outside secret walrus\n")
    memory.note("memory/real.md", "inside walrus\n")
    (memory.workspace / "agents/main/memory/link.md").symlink_to(outside)
    assert [h["path"] for h in await find(memory, "walrus")] == ["memory/real.md"]


async def test_very_common_words_do_not_drown_the_rare_ones(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word in most pieces is left out when a rarer one remains; alone it is kept."""
    from gsv_core.memory import search as search_module

    monkeypatch.setattr(search_module, "COMMON_MIN", 5)
    await memory.say("k", *[f"common filler {i}" for i in range(40)], "common axolotl")
    hits = await find(memory, "common axolotl", limit=3)
    assert [h["snippet"] for h in hits] == ["common **axolotl**"]
    assert len(await find(memory, "common", limit=50)) == 41


async def test_a_root_note_linked_out_of_the_workspace_is_skipped(
    memory: Memory, tmp_path: Any
) -> None:
    """MEMORY.md as a symlink leading outside neither breaks a search nor is read."""
    outside = tmp_path / "elsewhere.md"
    outside.write_text("narwhal outside\n")
    memory.note("USER.md", "narwhal inside\n")
    (memory.workspace / "agents/main/MEMORY.md").symlink_to(outside)
    assert [h["path"] for h in await find(memory, "narwhal")] == ["USER.md"]
