"""The gateway's one keepalive (gateway/keepalive.py): a peer heard from lately is never
pinged, a silent one is, and one that does not answer is dropped within interval +
timeout. The wheel is driven by a clock the test moves; then a real gateway drops a real
socket that stopped reading."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gsv_core.gateway.keepalive import Keepalive
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.gateway.test_nodes import client_socket
from tests.gateway.test_nodes import node_socket
from tests.waiting import until
from tests.wire import open_raw
from tests.wire import request

INTERVAL, TIMEOUT, TICK = 5.0, 8.0, 0.5
STEP = 0.1  # the test clock moves by this much between sweeps


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Peer:
    """A connection as the keepalive sees it; it answers pings while `answering`."""

    def __init__(self, clock: Clock, answering: bool = True) -> None:
        self.heard = clock.now
        self.answering = answering
        self.pings = 0
        self.lost_at: float | None = None
        self.reason = ""
        self._clock = clock

    async def ping(self) -> asyncio.Future[float]:
        self.pings += 1
        pong: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if self.answering:
            pong.set_result(0.001)
        return pong

    def lost(self, reason: str) -> None:
        self.lost_at, self.reason = self._clock.now, reason


async def run_for(keepalive: Keepalive, clock: Clock, seconds: float, *chatty: Peer) -> None:
    """Move the clock in small steps, sweeping as the keepalive's task would; `chatty`
    peers send something at every step."""
    end = clock.now + seconds
    while clock.now < end:
        clock.now += STEP
        for peer in chatty:
            peer.heard = clock.now
        await keepalive.sweep()
        await asyncio.sleep(0)  # pong callbacks run


def wheel(clock: Clock) -> Keepalive:
    return Keepalive(INTERVAL, TIMEOUT, close_timeout=2.0, tick=TICK, clock=clock)


async def test_a_peer_heard_from_lately_is_never_pinged_and_a_silent_one_is() -> None:
    clock = Clock()
    keepalive = wheel(clock)
    chatty, quiet = Peer(clock), Peer(clock)
    keepalive.watch(chatty)
    keepalive.watch(quiet)
    await run_for(keepalive, clock, 60.0, chatty)
    assert chatty.pings == 0
    # the quiet one is pinged about once per interval after its last pong, and stays
    assert 60.0 / (INTERVAL + TICK) <= quiet.pings <= 60.0 / (INTERVAL - TICK) + 1
    assert chatty.lost_at is None and quiet.lost_at is None
    assert len(keepalive) == 2


async def test_a_peer_that_stops_answering_is_dropped_within_interval_and_timeout() -> None:
    clock = Clock()
    keepalive = wheel(clock)
    peer = Peer(clock)
    keepalive.watch(peer)
    await run_for(keepalive, clock, 12.0)  # a few pings answered
    answered = peer.pings
    assert answered >= 2
    last_heard = peer.heard
    peer.answering = False  # frozen right after its last pong
    await run_for(keepalive, clock, 30.0)
    assert peer.lost_at is not None and peer.reason == "keepalive ping timeout"
    # never late (but for the test clock's step); early by at most a tick for the ping
    # and one for the timeout
    assert last_heard + INTERVAL + TIMEOUT - 2 * TICK <= peer.lost_at
    assert peer.lost_at <= last_heard + INTERVAL + TIMEOUT + STEP
    assert peer.pings == answered + 1
    assert len(keepalive) == 0  # forgotten: not pinged again


async def test_a_peer_that_talks_while_its_ping_is_out_is_still_judged_by_the_pong() -> None:
    """A message does not answer a ping: a peer whose pong never comes is dropped even if
    a frame it sent before freezing arrived late."""
    clock = Clock()
    keepalive = wheel(clock)
    peer = Peer(clock, answering=False)
    keepalive.watch(peer)
    await run_for(keepalive, clock, INTERVAL + 1.0)
    assert peer.pings == 1
    peer.heard = clock.now
    await run_for(keepalive, clock, TIMEOUT)
    assert peer.lost_at is not None


async def test_a_forgotten_peer_is_not_looked_at_again() -> None:
    clock = Clock()
    keepalive = wheel(clock)
    peer = Peer(clock, answering=False)
    keepalive.watch(peer)
    keepalive.forget(peer)
    keepalive.forget(peer)  # twice: a closing connection may
    await run_for(keepalive, clock, 30.0)
    assert peer.pings == 0 and peer.lost_at is None


@pytest.mark.parametrize("bad", [{"interval": 0}, {"timeout": -1.0}, {"tick": 0}])
def test_a_keepalive_needs_positive_times(bad: dict[str, float]) -> None:
    times = {"interval": 5.0, "timeout": 8.0, "close_timeout": 2.0, "tick": 0.5, **bad}
    with pytest.raises(ValueError, match="must be positive"):
        Keepalive(**times)


async def test_a_node_that_stops_reading_is_closed_and_its_tools_withdrawn(
    tmp_path: Path,
) -> None:
    """Over real sockets: the node stops reading (pings go unanswered), the gateway drops
    it, its tools leave tools.list, and the socket is closed with 1011 once it reads
    again; a client that keeps talking stays connected meanwhile."""
    config = ServerConfig(database=tmp_path / "gsv.db", ping_interval=0.2, ping_timeout=0.4)
    async with serve(config, port=0) as gw:
        client = await client_socket(gw)
        node = await node_socket(gw, "frozen")
        listed = await request(client, "tools.list")
        assert "frozen__Read" in [tool["name"] for tool in listed["payload"]["tools"]]
        node.transport.pause_reading()
        await until(lambda: gw.gateway.nodes.online("frozen") is None, "the node to go")
        listed = await request(client, "tools.list")
        assert "frozen__Read" not in [tool["name"] for tool in listed["payload"]["tools"]]
        node.transport.resume_reading()
        async with asyncio.timeout(10):
            await node.wait_closed()
        assert node.close_code == 1011 and node.close_reason == "keepalive ping timeout"
        assert (await request(client, "config.get"))["ok"]  # the client is still served
        await client.close()


async def test_a_node_that_stops_reading_mid_write_is_dropped_and_its_call_fails(
    tmp_path: Path,
) -> None:
    """The gateway is writing a call larger than the socket buffers to a node that
    stopped reading: the writer waits, a ping cannot even be written, yet the one
    keepalive goes on and drops the node, and the caller hears it is gone."""
    config = ServerConfig(database=tmp_path / "gsv.db", ping_interval=0.2, ping_timeout=0.4)
    async with serve(config, port=0) as gw:
        node = await node_socket(gw, "stuck")
        client = await client_socket(gw)
        node.transport.pause_reading()
        huge = {"tool": "stuck__Read", "args": {"path": "x" * (20 * 1024 * 1024)}}
        reply = await request(client, "tool.invoke", huge)
        assert not reply["ok"] and reply["error"]["code"] == 503
        assert "Node disconnected: stuck" in reply["error"]["message"]
        assert gw.gateway.nodes.online("stuck") is None
        other = await node_socket(gw, "other")  # the keepalive serves others on
        assert gw.gateway.nodes.online("other") is not None
        node.transport.abort()
        await other.close()
        await client.close()


async def test_a_peer_that_pings_the_gateway_itself_is_not_pinged(tmp_path: Path) -> None:
    """Any bytes count as heard, its own pings too: a peer pinging every 0.1 s is never
    silent for the 2 s that earn it a ping; one that sends nothing is pinged, answers,
    and stays."""
    config = ServerConfig(database=tmp_path / "gsv.db", ping_interval=2.0, ping_timeout=2.0)
    async with serve(config, port=0) as gw:
        assert gw.keepalive is not None
        talker = await open_raw(gw.url, ping_interval=0.1)
        await asyncio.sleep(4.0)  # two intervals
        assert gw.keepalive.pings_sent == 0
        quiet = await open_raw(gw.url, ping_interval=None)
        await until(lambda: gw.keepalive is not None and gw.keepalive.pings_sent >= 1)
        await until(lambda: gw.keepalive is not None and gw.keepalive.pings_sent >= 2)
        assert len(gw.keepalive) == 2  # the quiet one answered: both still watched
        await quiet.close()
        await talker.close()
