"""Hypothesis against a live gateway: random frames never crash it, and every `req` with a
usable id gets exactly one `res`."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol.methods import CONNECT, METHODS
from tests.threaded import threaded_gateway
from tests.wire import connect_params

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
method_names = st.sampled_from(sorted(set(METHODS) - {CONNECT})) | st.text(max_size=15)
# `req` frames built around our ids, plus arbitrary junk of every other shape
request_frames = st.fixed_dictionaries(
    {"type": st.just("req"), "method": method_names | json_values},
    optional={"params": json_values},
)
junk = st.one_of(
    st.text(max_size=40),
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["res", "evt", "bogus"])},
        optional={
            "id": json_values,
            "event": json_values,
            "ok": json_values,
            "payload": json_values,
        },
    ).map(json.dumps),
)
messages = st.lists(st.one_of(request_frames, junk), min_size=1, max_size=12)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    with threaded_gateway(Path(tmp_path_factory.mktemp("fuzz")) / "gsv.db") as running:
        yield running


def _replies_until(ws: ClientConnection, expected: set[str]) -> Counter[str]:
    seen: Counter[str] = Counter()
    while not expected <= set(seen):
        frame = json.loads(ws.recv(timeout=10))
        if frame.get("type") == "res":
            seen[frame["id"]] += 1
    return seen


def _send_all(ws: ClientConnection, batch: list[Any]) -> set[str]:
    expected: set[str] = set()
    for item in batch:
        if isinstance(item, dict):
            frame_id = str(uuid.uuid4())
            ws.send(json.dumps({**item, "id": frame_id}))
            expected.add(frame_id)
        else:
            ws.send(item)
    return expected


def _call(ws: Any, method: str, params: Any) -> Any:
    ws.send(json.dumps({"type": "req", "id": method, "method": method, "params": params}))
    reply = json.loads(ws.recv(timeout=10))
    assert reply["ok"], reply
    return reply["payload"]


def _join_as_channel(ws: Any, channel: str, owner_token: str) -> None:
    """The owner asks for a join code on this socket, then it connects as the adapter."""
    _call(ws, "connect", connect_params(token=owner_token))
    code = _call(ws, "auth.invite", {"role": "channel", "subject": channel})["code"]
    _call(ws, "connect", connect_params(mode="channel", channel=channel, token=None,
                                        auth={"joinCode": code}))  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=messages)
def test_random_frames_on_a_connected_socket_get_exactly_one_reply_each(
    live: RunningGateway, batch: list[Any]
) -> None:
    """Every req with an id is answered once; junk is ignored; the socket stays open."""
    # a channel-mode peer: random config.set calls are refused (403) and change nothing
    with connect(live.url, compression=None, proxy=None) as ws:
        _join_as_channel(ws, "fuzz", live.token)
        expected = _send_all(ws, batch)
        expected.add("final")
        ws.send(json.dumps({"type": "req", "id": "final", "method": "config.get", "params": {}}))
        seen = _replies_until(ws, expected)
    assert set(seen) == expected
    assert all(count == 1 for count in seen.values())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(params=json_values | st.fixed_dictionaries({}, optional={
    "minProtocol": json_values, "maxProtocol": json_values, "client": json_values,
    "tools": json_values, "auth": json_values, "nodeRuntime": json_values,
}))  # fmt: skip
def test_random_connect_params_always_get_one_reply(live: RunningGateway, params: Any) -> None:
    """connect with any params answers exactly once: hello-ok or an error code of docs/protocol.md#connect."""
    with connect(live.url, compression=None, proxy=None) as ws:
        ws.send(json.dumps({"type": "req", "id": "c", "method": "connect", "params": params}))
        reply = json.loads(ws.recv(timeout=10))
        try:
            ws.send(json.dumps({"type": "req", "id": "probe", "method": "config.get"}))
            probe = json.loads(ws.recv(timeout=10))
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 4001
            probe = None
    assert reply["id"] == "c"
    assert reply["ok"] or reply["error"]["code"] in {102, 103, 401, 403}
    if probe is None:  # a refused credential: the socket was closed after the reply
        assert reply["error"]["code"] in {401, 403}
        return
    # the socket survived; the probe is answered (101 if the handshake failed)
    assert probe["id"] == "probe"
    assert probe["ok"] == reply["ok"]
