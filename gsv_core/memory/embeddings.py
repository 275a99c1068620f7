"""Optional semantic ranking (docs/memory.md#semantic-ranking): when
`memory.embeddings {baseUrl, model, apiKey?}` names an OpenAI-compatible `/embeddings`
endpoint (Ollama's `/v1` included), every indexed piece is embedded in the background and
a search fuses the BM25 ranking with vector similarity by reciprocal rank, with a small
boost for recent pieces. Vectors are float32 blobs in `memory_vectors`, scanned in
Python; without an endpoint BM25 ranks alone and nothing here runs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import operator
import sqlite3
from array import array
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from gsv_core.storage.db import Database

log = logging.getLogger(__name__)
BATCH = 32  # pieces per embeddings request
TEXT_CHARS = 4000  # of each piece sent to be embedded
RRF_K = 60  # reciprocal-rank fusion: 1 / (RRF_K + rank)
CANDIDATES = 50  # of each ranking fused
RECENCY_DAYS = 30.0  # a piece this old gets half the boost of a new one
RECENCY_WEIGHT = 0.2  # the boost of a brand-new piece, relative to its fused score
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class EmbeddingsEndpoint:
    base_url: str  # up to /v1: the request goes to <base_url>/embeddings
    model: str
    api_key: str | None = None

    @classmethod
    def from_config(cls, value: Any) -> EmbeddingsEndpoint | None:
        if not isinstance(value, dict) or not value.get("baseUrl") or not value.get("model"):
            return None
        key = value.get("apiKey")
        return cls(str(value["baseUrl"]).rstrip("/"), str(value["model"]), key or None)


@dataclass(frozen=True)
class Embedded:
    vectors: list[list[float]]
    tokens: int  # what the endpoint billed (its `usage`), else about 4 characters a token


@dataclass(frozen=True)
class Spending:
    """The gateway's money side of embedding: `record(model, tokens)` writes a call to
    the usage ledger; `held()` names the reached budget that stops embedding, or None."""

    record: Callable[[str, int], Awaitable[None]]
    held: Callable[[], Awaitable[str | None]]


async def embed(
    client: httpx.AsyncClient, endpoint: EmbeddingsEndpoint, texts: Sequence[str]
) -> Embedded:
    """One vector per text, in order; raises httpx.HTTPError or ValueError on a bad answer."""
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    sent = [t[:TEXT_CHARS] for t in texts]
    body = {"model": endpoint.model, "input": sent}
    answer = await client.post(f"{endpoint.base_url}/embeddings", json=body, headers=headers)
    answer.raise_for_status()
    document = answer.json()
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or len(data) != len(texts):
        raise ValueError("the embeddings endpoint answered without one vector per text")
    ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
    vectors = [item.get("embedding") for item in ordered]
    if not all(isinstance(v, list) and v for v in vectors):
        raise ValueError("the embeddings endpoint answered an empty or malformed vector")
    return Embedded([[float(x) for x in v] for v in vectors], _tokens(document, sent))


def _tokens(document: dict[str, Any], sent: Sequence[str]) -> int:
    usage = document.get("usage")
    billed = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(billed, int) and not isinstance(billed, bool) and billed >= 0:
        return billed
    return sum(len(text) for text in sent) // 4 + len(sent)


def pack(vector: Sequence[float]) -> bytes:
    """A unit-length float32 blob (so similarity is a dot product)."""
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return array("f", (x / norm for x in vector)).tobytes()


def unpack(blob: bytes) -> array[float]:
    values = array("f")
    values.frombytes(blob)
    return values


def nearest(rows: Sequence[tuple[int, bytes]], query: Sequence[float], count: int) -> list[int]:
    """The ids of the `count` rows most similar to `query`, best first, ties in row order
    (rows of another size skipped). numpy does the scan when installed (`gsv[semantic]`);
    plain Python otherwise, slower on a large index but the same answer."""
    unit = unpack(pack(query))
    same = [(doc_id, blob) for doc_id, blob in rows if len(blob) == len(unit) * unit.itemsize]
    try:
        import numpy  # noqa: F401  (only whether it is there)
    except ImportError:
        return nearest_python(same, unit, count)
    return nearest_numpy(same, unit, count)


def nearest_python(rows: Sequence[tuple[int, bytes]], unit: array[float], count: int) -> list[int]:
    scored = [(sum(map(operator.mul, unit, unpack(blob))), doc_id) for doc_id, blob in rows]
    scored.sort(key=lambda item: -item[0])  # stable: ties keep their row order
    return [doc_id for _, doc_id in scored[:count]]


def nearest_numpy(rows: Sequence[tuple[int, bytes]], unit: array[float], count: int) -> list[int]:
    import numpy as np

    if not rows:
        return []
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
    scores = matrix.reshape(len(rows), len(unit)) @ np.frombuffer(unit.tobytes(), np.float32)
    order = np.argsort(-scores, kind="stable")[:count]
    return [rows[int(i)][0] for i in order]


def fuse(
    bm25: Sequence[int], vector: Sequence[int], at: dict[int, int | None], now_ms: int
) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion of two rankings (best first) as (id, score), each score
    raised by up to RECENCY_WEIGHT for a recent piece (halving every RECENCY_DAYS)."""
    scores: dict[int, float] = {}
    for ranking in (bm25, vector):
        for rank, doc_id in enumerate(ranking):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (RRF_K + rank + 1)
    for doc_id, score in scores.items():
        when = at.get(doc_id)
        if when is not None:
            age_days = max(0.0, (now_ms - when) / 86_400_000)
            scores[doc_id] = score * (1 + RECENCY_WEIGHT * 0.5 ** (age_days / RECENCY_DAYS))
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def pending(conn: sqlite3.Connection, model: str, limit: int) -> list[tuple[int, str]]:
    return conn.execute(
        "SELECT id, text FROM memory_docs d WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v "
        "WHERE v.doc_id = d.id AND v.model = ?) ORDER BY id DESC LIMIT ?",
        (model, limit),
    ).fetchall()


def save_vectors(
    conn: sqlite3.Connection, model: str, ids: Sequence[int], vectors: Sequence[Sequence[float]]
) -> None:
    conn.executemany(  # a piece deleted meanwhile is skipped
        "INSERT OR REPLACE INTO memory_vectors (doc_id, model, vec) "
        "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM memory_docs WHERE id = ?)",
        [(i, model, pack(v), i) for i, v in zip(ids, vectors, strict=True)],
    )


class Embedder:
    """Embeds what is not embedded yet, in the background, whenever `kick()` is called
    (at start, after writes, before searches); one task at a time, cancelled by close()."""

    def __init__(
        self,
        db: Database,
        endpoint: Callable[[], EmbeddingsEndpoint | None],
        spending: Spending | None = None,
        caught_up: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._db = db
        self.endpoint = endpoint
        self._spending = spending  # None: nothing records or limits (tests of the index)
        # brings the index up to date first (stored messages wait to be indexed: index.py)
        self._caught_up = caught_up
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self.error: str | None = None

    def kick(self) -> None:
        if self.endpoint() is None:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def idle(self) -> None:
        """Until the running pass (and any pass asked for during it) ends."""
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task})

    async def query_vector(self, text: str) -> list[float] | None:
        """The query's vector, or None (logged) when there is no endpoint or it failed:
        the search then ranks by BM25 alone."""
        endpoint = self.endpoint()
        if endpoint is None or await self._held():
            return None
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
                embedded = await embed(client, endpoint, [text])
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("embedding a query failed (BM25 alone ranks): %s", exc)
            return None
        await self._record(endpoint, embedded)
        return embedded.vectors[0]

    async def _record(self, endpoint: EmbeddingsEndpoint, embedded: Embedded) -> None:
        if self._spending is not None:  # the ledger logs, never raises, a lost row
            await self._spending.record(endpoint.model, embedded.tokens)

    async def _held(self) -> bool:
        """Whether a reached budget stops embedding now (said in `error`, and logged)."""
        reason = await self._spending.held() if self._spending is not None else None
        if reason is not None:
            self.error = reason
            log.info("embedding memory waits for the budget: %s", reason)
        return reason is not None

    async def _run(self) -> None:
        while True:
            self._again = False
            endpoint = self.endpoint()
            if endpoint is None:
                return
            try:
                async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
                    if not await self._embed_all(client, endpoint):
                        return  # a budget holds it: `error` says which; the next kick looks again
                self.error = None
            except (httpx.HTTPError, ValueError) as exc:
                self.error = str(exc)
                log.warning("embedding memory failed (tried again at the next change): %s", exc)
                return
            if not self._again:
                return

    async def _embed_all(self, client: httpx.AsyncClient, endpoint: EmbeddingsEndpoint) -> bool:
        """Embed every pending piece; False when a reached budget stopped it first."""
        model = endpoint.model
        if self._caught_up is not None:
            await self._caught_up()
        while batch := await self._db.read(lambda c: pending(c, model, BATCH)):
            if await self._held():
                return False
            ids = [doc_id for doc_id, _ in batch]
            embedded = await embed(client, endpoint, [text for _, text in batch])
            await self._record(endpoint, embedded)
            await self._db.write(
                functools.partial(save_vectors, model=model, ids=ids, vectors=embedded.vectors)
            )
        return True
