"""A node's heartbeat (an unsolicited pong, gsv_core/client.py `beat`): the gateway, which
pings only a peer it has not heard from for its ping interval, never pings a beating node,
yet still drops a node that goes silent; heartbeats the gateway would outwait are refused.
A real gateway on port 0 with short keepalive times, a real node daemon."""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path

import pytest
from hypothesis import example
from hypothesis import given
from hypothesis import strategies as st

from gsv_core.client import MARK_TOLERANCE
from gsv_core.client import UNACKED_TIMEOUT_APPLIES
from gsv_core.client import mark_after_beat
from gsv_core.client import next_mark
from gsv_core.client import until_mark
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.node.daemon import NodeSettings
from gsv_core.node.daemon import check_heartbeat
from gsv_core.node.daemon import node_ping_interval
from tests.gateway.test_nodes import node_socket
from tests.node.test_daemon import node_online
from tests.node.test_daemon import running_node
from tests.waiting import until

# the gateway pings after 2 s of silence; the node beats ten times as often
SHORT = {"ping_interval": 2.0, "ping_timeout": 1.0, "close_timeout": 0.5}
BEAT = 0.2


async def test_a_beating_node_is_never_pinged_and_a_silent_one_is_dropped(
    tmp_path: Path,
) -> None:
    config = ServerConfig(database=tmp_path / "gsv.db", **SHORT)
    async with serve(config, port=0) as gw:
        assert gw.keepalive is not None
        async with running_node(gw.url, tmp_path, heartbeat=BEAT) as daemon:
            await node_online(gw)
            await asyncio.sleep(3 * SHORT["ping_interval"])  # three chances to be pinged
            assert gw.keepalive.pings_sent == 0
            assert gw.gateway.nodes.online("n1") is not None and daemon.connected.is_set()
            # a node that sends nothing and does not read (a frozen machine) is pinged,
            # never answers, and is dropped as before; the beating one stays
            frozen = await node_socket(gw, "frozen")
            frozen.transport.pause_reading()
            await until(lambda: gw.gateway.nodes.online("frozen") is None, "the frozen node to go")
            assert gw.keepalive.pings_sent >= 1
            frozen.transport.resume_reading()
            async with asyncio.timeout(10):
                await frozen.wait_closed()
            assert frozen.close_code == 1011 and frozen.close_reason == "keepalive ping timeout"
            assert gw.gateway.nodes.online("n1") is not None and daemon.connected.is_set()


async def test_the_heartbeat_outlives_a_gateway_restart(tmp_path: Path) -> None:
    """The socket closing under the heartbeat does not stop the daemon: it reconnects to a
    gateway on the same port and beats on there (never pinged)."""
    config = ServerConfig(database=tmp_path / "gsv.db", **SHORT)
    async with serve(config, port=0) as gw:
        port = gw.port
        daemon_cm = running_node(gw.url, tmp_path, heartbeat=BEAT)
        daemon = await daemon_cm.__aenter__()
        await node_online(gw)
        await asyncio.sleep(5 * BEAT)  # a few beats before the socket goes
    try:
        await until(lambda: not daemon.connected.is_set(), "the node to see the close")
        async with serve(config, port=port) as again:
            await node_online(again)
            await asyncio.sleep(2 * SHORT["ping_interval"])
            assert again.keepalive is not None and again.keepalive.pings_sent == 0
            assert daemon.connected.is_set()
    finally:
        await daemon_cm.__aexit__(None, None, None)


def test_the_default_heartbeat_beats_the_gateways_ping() -> None:
    config = ServerConfig(database=Path("unused.db"))
    assert config.ping_interval is not None and config.ping_timeout is not None
    assert NodeSettings.heartbeat < config.ping_interval
    assert config.ping_interval + config.ping_timeout + config.close_timeout <= 15


def test_the_node_pings_rarely_where_unacknowledged_bytes_time_out() -> None:
    """With TCP_USER_TIMEOUT the heartbeat notices a partition, so the ping is a backstop
    every five minutes; without it the ping stays once a minute; both are valid settings."""
    assert node_ping_interval(unacked_timeout=True) == 300.0
    assert node_ping_interval(unacked_timeout=False) == 60.0
    for unacked_timeout in (True, False):
        check_heartbeat(NodeSettings.heartbeat, node_ping_interval(unacked_timeout))
    assert NodeSettings.ping_interval == node_ping_interval(UNACKED_TIMEOUT_APPLIES)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"heartbeat": 0.0}, "heartbeat must be more than 0"),
        ({"heartbeat": -1.0}, "heartbeat must be more than 0"),
        ({"heartbeat": 10.0}, "under the gateway's 10 s ping interval"),
        ({"heartbeat": math.nan}, "heartbeat must be more than 0"),
        ({"ping_interval": 0.0}, "ping interval must be a positive number"),
        ({"ping_interval": math.inf}, "ping interval must be a positive number"),
    ],
)
def test_bad_heartbeat_settings_are_refused(
    tmp_path: Path, bad: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        NodeSettings(url="ws://127.0.0.1:9/ws", node_id="n1", workspace=tmp_path, **bad)


@given(after=st.floats(0, 4e9), every=st.floats(0.05, 60))
def test_beats_fall_on_the_wall_clocks_marks(after: float, every: float) -> None:
    """Every node beats on the same marks of the clock (a fleet's pongs come together),
    the next one strictly after now and at most a period away."""
    mark = next_mark(after, every)
    assert after < mark <= after + every + 4 * math.ulp(mark)  # float rounding aside
    assert math.isclose(mark / every, round(mark / every), abs_tol=1e-6)


@pytest.mark.parametrize(
    ("woke", "then"),
    [
        (16.001, 24.0),  # on time: the next mark
        (15.999, 24.0),  # the loop woke a hair before the wall clock got there: not twice
        (29.0, 32.0),  # late past a mark: the first after now, no catch-up beats
        (3.0, 8.0),  # the clock stepped back: the first mark after its new now
        (13.0, 16.0),  # stepped back 3 s (the sleep, capped at a period, beat early): on
        # the mark itself next, back in step with the fleet
        (17.5, 24.0),  # late by more than the tolerance: still the next mark after now
        (100.0, 104.0),  # stepped forward
    ],
)
def test_the_mark_after_a_beat(woke: float, then: float) -> None:
    assert mark_after_beat(16.0, woke, 8.0) == then


@given(
    start=st.floats(0, 4e9),
    steps=st.lists(st.floats(-60, 60), max_size=6),
    slow=st.lists(st.floats(0, 0.5), min_size=8, max_size=8),
)
@example(start=1e9, steps=[-3.0], slow=[0.0] * 8)  # stepped back less than half a period
def test_beats_never_leave_a_gap_and_come_back_to_the_marks(
    start: float, steps: list[float], slow: list[float]
) -> None:
    """`beat`'s loop, run on a simulated clock: whatever steps the wall clock takes
    between beats and however late the loop wakes, no gap between beats is over a period
    (plus the lateness), and once the clock is left alone the beats are back on its marks
    by the second one."""
    every = 8.0
    elapsed = 0.0  # the loop's own (monotonic) clock
    offset = start  # wall = elapsed + offset
    mark = next_mark(offset, every)
    beats: list[tuple[float, float]] = []  # (monotonic, wall) of each beat
    for step, late in zip([*steps, 0.0, 0.0, 0.0], slow, strict=False):
        elapsed += until_mark(mark, elapsed + offset, every) + late
        beats.append((elapsed, elapsed + offset))
        mark = mark_after_beat(mark, elapsed + offset, every)
        offset += step  # the wall clock stepped while we slept
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(beats)]
    assert all(gap <= every + max(slow) + 1e-6 for gap in gaps)
    if len(steps) + 3 <= len(slow):  # the clock left alone for the last three beats
        wall = beats[-1][1]
        assert min(wall % every, every - wall % every) <= max(slow) + MARK_TOLERANCE
