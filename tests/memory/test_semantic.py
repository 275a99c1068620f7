"""Optional semantic ranking against a fake embeddings server on 127.0.0.1: pieces are
embedded in the background, a search by meaning finds what shares no word with it, a
piece found both ways ranks first, recent pieces are raised, a piece's vector goes with
it, and a failing endpoint leaves BM25 ranking alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.memory.embeddings import EmbeddingsEndpoint
from gsv_core.memory.embeddings import embed
from gsv_core.memory.embeddings import fuse
from gsv_core.memory.embeddings import nearest
from gsv_core.memory.embeddings import nearest_numpy
from gsv_core.memory.embeddings import nearest_python
from gsv_core.memory.embeddings import pack
from gsv_core.memory.embeddings import unpack
from gsv_core.memory.search import MemoryScope
from gsv_core.memory.search import search_request
from gsv_core.memory.service import MemoryService
from gsv_core.storage.db import Database
from gsv_core.storage.sessions import SessionStore
from gsv_core.workspace.backend import FilesystemBackend
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.embeddings_server import FakeEmbeddingsServer
from tests.fakes.embeddings_server import fake_embeddings_server
from tests.memory.conftest import Memory

NOW = 1_800_000_000_000
DAY = 86_400_000


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddingsServer]:
    with fake_embeddings_server() as server:
        yield server


@pytest.fixture
async def semantic(tmp_path: Path, embeddings: FakeEmbeddingsServer) -> AsyncIterator[Memory]:
    db = await Database.open(tmp_path / "gsv.db")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    endpoint = EmbeddingsEndpoint(embeddings.base_url, "fake-embed", "sk-test")
    service = MemoryService(db, FilesystemBackend(workspace), tuple, lambda: endpoint)
    try:
        yield Memory(db, service, SessionStore(db, service.index), workspace)
    finally:
        await service.close()
        await db.close()


async def find(memory: Memory, query: str) -> list[dict]:
    request = search_request(query, "all", None, None, 10, NOW)
    return await memory.service.search(request, MemoryScope.everything())


async def embedded(memory: Memory) -> None:
    memory.service.embedder.kick()
    await memory.service.embedder.idle()


async def test_a_search_by_meaning_finds_what_shares_no_word(
    semantic: Memory, embeddings: FakeEmbeddingsServer
) -> None:
    """`automobile` finds the message about a car once it is embedded; the key is sent."""
    await semantic.say("agent:main:main", "my car is parked on level three", at=NOW - DAY)
    await semantic.say("agent:main:other", "the weather is fine today", at=NOW - DAY)
    await embedded(semantic)
    assert len(embeddings.texts()) == 2 and embeddings.requests[0]["model"] == "fake-embed"
    status = await semantic.service.status()
    assert status["embeddings"] == {"model": "fake-embed", "vectors": 2}
    [first, *_] = await find(semantic, "automobile")
    assert first["sessionKey"] == "agent:main:main" and "car is parked" in first["snippet"]


async def test_bm25_alone_cannot_find_it(memory: Memory) -> None:
    """Without an endpoint the same search finds nothing: no word is shared."""
    await memory.say("agent:main:main", "my car is parked on level three")
    assert await find(memory, "automobile") == []
    assert (await memory.service.status())["embeddings"] is None


async def test_a_hit_found_both_ways_ranks_first(semantic: Memory) -> None:
    """`dog vet` matches one message by word and meaning, another by meaning only."""
    await semantic.say("agent:main:a", "the puppy needs a walk", at=NOW - DAY)
    await semantic.say("agent:main:b", "take the dog to the vet", at=NOW - DAY)
    await embedded(semantic)
    found = await find(semantic, "dog vet")
    assert [h["sessionKey"] for h in found] == ["agent:main:b", "agent:main:a"]


def test_fusion_adds_ranks_and_raises_recent_pieces() -> None:
    """Reciprocal-rank fusion: both lists beat one; of two equal, the newer wins."""
    assert next(i for i, _ in fuse([1, 2], [2, 3], {}, NOW)) == 2
    ranked = fuse([1], [2], {1: NOW - 400 * DAY, 2: NOW - DAY}, NOW)
    assert [i for i, _ in ranked] == [2, 1]


async def test_a_vector_goes_with_its_piece(semantic: Memory) -> None:
    """Clearing a session's live rows drops their vectors too."""
    await semantic.say("agent:main:main", "my car is red")
    await embedded(semantic)
    await semantic.db.write(lambda c: semantic.service.index.cleared(c, "agent:main:main"))
    count = await semantic.db.read(
        lambda c: c.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0]
    )
    assert count == 0


async def test_a_failing_endpoint_leaves_bm25(
    semantic: Memory, embeddings: FakeEmbeddingsServer
) -> None:
    """The endpoint answers 500: searches still find words, the error is kept to show."""
    embeddings.fail = True
    await semantic.say("agent:main:main", "my car is red")
    await embedded(semantic)
    assert semantic.service.embedder.error is not None
    status = await semantic.service.status()
    assert status["embeddings"]["vectors"] == 0 and "500" in status["embeddings"]["error"]
    [hit] = await find(semantic, "car")
    assert hit["sessionKey"] == "agent:main:main"
    assert await find(semantic, "automobile") == []


async def test_a_gateway_with_embeddings_finds_by_meaning(
    gw: RunningGateway,
    client: GatewayClient,
    log: EventLog,
    embeddings: FakeEmbeddingsServer,
) -> None:
    """memory.embeddings set through config.set: after a search has the chat embedded,
    memory.search finds the car by `automobile`; the key goes to the endpoint."""
    value = {"baseUrl": embeddings.base_url, "model": "fake-embed", "apiKey": "sk-gw"}
    await client.call("config.set", {"path": "memory.embeddings", "value": value})
    run_id = (await send(client, "my car is parked on level three"))["runId"]
    await log.ended(run_id)
    await client.call("memory.search", {"query": "parked"})  # stored since: embedded next
    await gw.gateway.memory.embedder.idle()
    found = await client.call("memory.search", {"query": "automobile"})
    assert any("car is parked" in hit["snippet"] for hit in found["results"])
    assert embeddings.headers[-1] == "Bearer sk-gw"
    # what the embeddings cost is in the ledger, as background work of memory search
    report = await client.call("usage.get", {"groupBy": "source"})
    [memory] = [group for group in report["groups"] if group["name"] == "memory"]
    assert memory["calls"] == len(embeddings.billed) >= 2
    assert memory["input"] == sum(embeddings.billed) and memory["output"] == 0


async def test_a_reached_background_budget_stops_embedding(
    gw: RunningGateway,
    client: GatewayClient,
    log: EventLog,
    embeddings: FakeEmbeddingsServer,
) -> None:
    """budget.background 0: nothing is sent to the endpoint (memory.status says why, and
    BM25 still finds words); raised, the next search embeds."""
    await client.call("config.set", {"path": "budget.background", "value": 0})
    value = {"baseUrl": embeddings.base_url, "model": "fake-embed"}
    await client.call("config.set", {"path": "memory.embeddings", "value": value})
    run_id = (await send(client, "my car is parked on level three"))["runId"]
    await log.ended(run_id)
    found = await client.call("memory.search", {"query": "parked"})
    await gw.gateway.memory.embedder.idle()
    assert any("car is **parked**" in hit["snippet"] for hit in found["results"])
    assert embeddings.requests == []
    status = await client.call("memory.status", {})
    assert "background budget" in status["embeddings"]["error"]
    await client.call("config.set", {"path": "budget.background", "value": 5})
    await client.call("memory.search", {"query": "parked"})
    await gw.gateway.memory.embedder.idle()
    assert (
        embeddings.requests
        and "error" not in (await client.call("memory.status", {}))["embeddings"]
    )


async def test_an_endpoint_without_usage_is_billed_by_estimate(
    embeddings: FakeEmbeddingsServer,
) -> None:
    """No `usage` in the answer: about four characters a token (and one per text)."""
    embeddings.bills = False
    endpoint = EmbeddingsEndpoint(embeddings.base_url, "fake-embed")
    async with httpx.AsyncClient() as http:
        embedded = await embed(http, endpoint, ["x" * 40, "y" * 8])
    assert len(embedded.vectors) == 2 and embedded.tokens == (40 + 8) // 4 + 2
    embeddings.bills = True
    async with httpx.AsyncClient() as http:
        billed = await embed(http, endpoint, ["one two three", "four"])
    assert billed.tokens == 4 == embeddings.billed[-1]


def test_the_numpy_and_python_scans_agree() -> None:
    """Both scans give the same ids in the same order, ties in row order."""
    vectors = [[1, 0, 0], [0, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1], [3, 1, 0]]
    rows = [(n + 10, pack(v)) for n, v in enumerate(vectors)]
    unit = unpack(pack([1, 0.2, 0]))
    expected = nearest_python(rows, unit, 4)
    assert expected[:2] == [15, 10] and expected[2] == 13
    assert nearest([(99, pack([1, 0])), *rows], [1, 0.2, 0], 4) == expected  # other size
    pytest.importorskip("numpy")  # gsv[semantic]
    assert nearest_numpy(rows, unit, 4) == expected
