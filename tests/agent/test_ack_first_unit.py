"""AckFirst and KeyLocks, the two scheduling pieces of the ack path (issue 41), driven
directly: runs wait while a message is being acknowledged, never for good, and work on
different session keys is not serialised."""

from __future__ import annotations

import asyncio

from gsv_core.agent.ack_first import AckFirst
from gsv_core.workspace.locks import KeyLocks


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_run_waits_for_the_ack_in_progress_then_goes_on() -> None:
    acks = AckFirst(hold_limit=60)
    with acks.ack():
        turn = asyncio.create_task(acks.turn())
        await _settle()
        assert not turn.done()  # held while the message is being acknowledged
        assert acks.acking == 1
    await asyncio.wait_for(turn, 5)
    assert acks.acking == 0


async def test_with_no_ack_in_progress_a_turn_only_yields() -> None:
    acks = AckFirst(hold_limit=60)
    await asyncio.wait_for(acks.turn(), 5)
    assert acks.acking == 0


async def test_a_piece_of_a_reply_does_not_wait_for_acks() -> None:
    """turn(hold=False), taken for each piece of a streamed reply, only paces: with a
    message being acknowledged it still goes on, where a step's turn waits."""
    acks = AckFirst(hold_limit=60)
    with acks.ack():
        await asyncio.wait_for(acks.turn(hold=False), 5)
        step = asyncio.create_task(acks.turn())
        await _settle()
        assert not step.done()
    await asyncio.wait_for(step, 5)


async def test_a_slow_part_of_an_ack_steps_aside_for_runs() -> None:
    acks = AckFirst(hold_limit=60)
    with acks.ack():
        with acks.aside():
            assert acks.acking == 0
            await asyncio.wait_for(acks.turn(), 5)  # a command's model call: runs go on
        assert acks.acking == 1
        turn = asyncio.create_task(acks.turn())
        await _settle()
        assert not turn.done()
    await asyncio.wait_for(turn, 5)


async def test_nested_acks_release_runs_only_when_the_last_ends() -> None:
    acks = AckFirst(hold_limit=60)
    first, second = acks.ack(), acks.ack()
    first.__enter__()
    second.__enter__()
    turn = asyncio.create_task(acks.turn())
    first.__exit__(None, None, None)
    await _settle()
    assert not turn.done()
    second.__exit__(None, None, None)
    await asyncio.wait_for(turn, 5)


async def test_a_flood_of_acks_never_stops_a_run_for_good() -> None:
    acks = AckFirst(hold_limit=0.01)
    with acks.ack():  # never ends while the run waits
        await asyncio.wait_for(acks.turn(), 5)
        assert acks.acking == 1


async def test_an_ack_that_fails_still_releases_runs() -> None:
    acks = AckFirst(hold_limit=60)
    try:
        with acks.ack():
            raise ValueError("bad params")
    except ValueError:
        pass
    assert acks.acking == 0
    await asyncio.wait_for(acks.turn(), 5)


async def test_one_key_at_a_time_other_keys_side_by_side() -> None:
    locks = KeyLocks()
    order: list[str] = []
    gate = asyncio.Event()

    async def hold(key: str, name: str) -> None:
        async with locks.hold(key):
            order.append(f"{name} in")
            await gate.wait()
            order.append(f"{name} out")

    tasks = [asyncio.create_task(hold("a", "a1")), asyncio.create_task(hold("a", "a2")),
             asyncio.create_task(hold("b", "b1"))]  # fmt: skip
    await _settle()
    assert order == ["a1 in", "b1 in"]  # a2 waits for a1; b1 does not wait for anyone
    assert len(locks) == 2
    gate.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert order.index("a2 in") > order.index("a1 out")
    assert len(locks) == 0  # nothing kept for keys nobody holds


async def test_a_key_lock_is_released_when_its_holder_fails() -> None:
    locks = KeyLocks()
    try:
        async with locks.hold("a"):
            raise ValueError("creation failed")
    except ValueError:
        pass
    assert len(locks) == 0
    async with locks.hold("a"):
        assert len(locks) == 1


async def test_runs_take_turns_a_few_per_pass_first_come_first_served() -> None:
    acks = AckFirst(hold_limit=60, per_round=2)
    passed: list[int] = []
    counts: list[int] = []  # turns taken by the end of each pass of the loop

    async def run(n: int) -> None:
        await acks.turn()
        passed.append(n)

    tasks = [asyncio.create_task(run(n)) for n in range(7)]
    for _ in range(40):
        await asyncio.sleep(0)
        counts.append(len(passed))
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert sorted(passed) == list(range(7))  # every run had its turn
    assert passed[2:] == sorted(passed[2:])  # the waiters in the order they came
    steps = [b - a for a, b in zip([0, *counts], counts, strict=False)]
    assert max(steps) <= 2  # never more than a round's worth in one pass


async def test_a_run_stopped_while_waiting_for_its_turn_gives_its_place_up() -> None:
    acks = AckFirst(hold_limit=60, per_round=1)
    first = asyncio.create_task(acks.turn())
    stopped = asyncio.create_task(acks.turn())
    last = asyncio.create_task(acks.turn())
    while not first.done():
        await asyncio.sleep(0)
    assert not stopped.done()  # waiting for the next round's one turn
    stopped.cancel()
    await asyncio.wait_for(asyncio.gather(first, last), 5)  # the place goes to the next
    assert stopped.cancelled()
