"""gsv_core.ids: random ids drawn from a pool of os.urandom bytes, not a system call
each (a uuid4 per new session held the event loop in a crowd: see the module)."""

from __future__ import annotations

import os
import uuid

from gsv_core import ids


def test_ids_are_version_4_uuids_and_never_repeat_across_draws() -> None:
    """Well past one pool: every id a valid random UUID, no two alike."""
    made = [ids.new_uuid() for _ in range(3 * ids.POOL_BYTES // 16 + 7)]
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in made)
    assert len(set(made)) == len(made)
    text = ids.new_id()
    assert str(uuid.UUID(text)) == text and len(text) == 36


def test_hex_ids_have_the_length_asked() -> None:
    assert len(ids.new_hex()) == 32 and len(ids.new_hex(6)) == 6
    assert all(c in "0123456789abcdef" for c in ids.new_hex())


def test_a_request_larger_than_the_pool_is_served_whole() -> None:
    big = ids.random_bytes(ids.POOL_BYTES + 100)
    assert len(big) == ids.POOL_BYTES + 100
    assert len(ids.random_bytes(16)) == 16


def test_a_forked_child_does_not_repeat_its_parents_next_ids() -> None:
    """A fork copies the pool: the child must draw afresh, or parent and child would
    hand out the same ids."""
    ids.new_id()  # the pool holds unused bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent, then out
        try:
            os.write(write, "".join(ids.new_hex() for _ in range(4)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parent = "".join(ids.new_hex() for _ in range(4))
    assert len(child) == len(parent) == 128
    assert child != parent
