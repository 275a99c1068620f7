"""BatchedLookup (storage/batched.py): the point lookups of one pass of the event loop
are read in one query; each caller still gets its own answer, error or cancellation."""

from __future__ import annotations

import asyncio

import pytest

from gsv_core.storage.batched import MAX_KEYS
from gsv_core.storage.batched import BatchedLookup
from tests.waiting import until


class Store:
    """A fetch that records every batch of keys it is asked for."""

    def __init__(self, values: dict[str, int], error: Exception | None = None) -> None:
        self.values = values
        self.error = error
        self.batches: list[list[str]] = []
        self.release = asyncio.Event()
        self.release.set()

    async def fetch(self, keys: list[str]) -> dict[str, int]:
        self.batches.append(keys)
        await self.release.wait()
        if self.error is not None:
            raise self.error
        return {key: self.values[key] for key in keys if key in self.values}


async def test_lookups_of_one_pass_are_one_read_and_each_gets_its_own_answer() -> None:
    store = Store({"a": 1, "b": 2})
    lookup = BatchedLookup(store.fetch)
    found = await asyncio.gather(*(lookup.get(key) for key in ("a", "b", "missing", "a")))
    assert found == [1, 2, None, 1]
    assert store.batches == [["a", "b", "missing"]]
    assert await lookup.get("b") == 2  # a later pass: a read of its own
    assert store.batches[1:] == [["b"]]


async def test_a_big_crowd_is_read_in_parts() -> None:
    keys = [f"k{i}" for i in range(MAX_KEYS + 3)]
    store = Store({key: i for i, key in enumerate(keys)})
    lookup = BatchedLookup(store.fetch)
    assert await asyncio.gather(*(lookup.get(key) for key in keys)) == list(range(len(keys)))
    assert [len(batch) for batch in store.batches] == [MAX_KEYS, 3]


async def test_a_failed_read_fails_every_lookup_of_it() -> None:
    store = Store({}, error=RuntimeError("disk on fire"))
    lookup = BatchedLookup(store.fetch)
    results = await asyncio.gather(lookup.get("a"), lookup.get("b"), return_exceptions=True)
    assert [str(result) for result in results] == ["disk on fire", "disk on fire"]
    store.error = None
    store.values = {"a": 7}
    assert await lookup.get("a") == 7  # the next read is not spoiled


async def test_a_cancelled_lookup_leaves_the_others_their_answer() -> None:
    store = Store({"a": 1})
    store.release.clear()
    lookup = BatchedLookup(store.fetch)
    first = asyncio.ensure_future(lookup.get("a"))
    second = asyncio.ensure_future(lookup.get("a"))
    await until(lambda: store.batches, "the read to start")
    first.cancel()
    store.release.set()
    assert await second == 1
    with pytest.raises(asyncio.CancelledError):
        await first
