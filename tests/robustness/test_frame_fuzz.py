"""Hypothesis against a live gateway: random frames, well formed or hostile, never crash
it and never leave it silent. Every `req` with a usable id gets exactly one `res`; a
message that cannot be read at all (bad UTF-8, over the size limit, a lone surrogate in
the id, too deep to find the id) closes the socket with 1007 or 1009 instead; nothing
logs an error or a traceback.

Examples per test: FUZZ_EXAMPLES (60, what CI runs); set GSV_FUZZ_EXAMPLES for a longer
hunt, e.g. `GSV_FUZZ_EXAMPLES=5000 python -m pytest tests/robustness/test_frame_fuzz.py`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect

from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.frames import INVALID_DATA
from gsv_core.protocol.methods import CONNECT
from gsv_core.protocol.methods import METHODS
from tests.robustness.conftest import troubles
from tests.threaded import threaded_gateway
from tests.wire import connect_params

FUZZ_EXAMPLES = int(os.environ.get("GSV_FUZZ_EXAMPLES", "60"))
settings.register_profile(
    "gsv-fuzz",
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FUZZ = settings.get_profile("gsv-fuzz")
MAX_SIZE = 64 * 1024  # the fuzzed gateway's message limit: an oversize message stays cheap

# strings a frame must not carry (refused naming the field), among ordinary ones
hostile_text = st.text(
    st.characters(categories=["Cs"]) | st.sampled_from(["\x00", "a", "é"]), min_size=1, max_size=4
)
texts = st.text(max_size=20) | hostile_text
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)
method_names = st.sampled_from(sorted(set(METHODS) - {CONNECT})) | st.text(max_size=15)
# `req` frames built around our ids, plus arbitrary junk of every other shape
request_frames = st.fixed_dictionaries(
    {"type": st.just("req"), "method": method_names | json_values},
    optional={"params": json_values},
)


@dataclass(frozen=True)
class Written:
    """A `req` written by hand (JSON the encoder would not produce) around our id."""

    template: str  # `<ID>` stands for the id

    def text(self, frame_id: str) -> str:
        return self.template.replace("<ID>", json.dumps(frame_id))


def _deep(depth: int) -> Written:
    nested = "[" * depth + "]" * depth
    return Written(f'{{"type":"req","id":<ID>,"method":"config.get","params":{{"x":{nested}}}}}')


# shallow and far too deep for the parser: answered either way (the id comes first)
deep_requests = st.integers(1, 3000).map(_deep)
junk = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=16),  # binary frames: transfer chunks, dropped when they are not
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


@dataclass(frozen=True)
class Unreadable:
    """A message no reply can be addressed to: the socket must close with `code`."""

    data: str | bytes
    code: int


unreadable = st.one_of(
    st.binary(max_size=8).map(lambda tail: Unreadable(b"\xff" + tail, INVALID_DATA)),
    st.just(Unreadable("x" * (MAX_SIZE + 1), CloseCode.MESSAGE_TOO_BIG)),
    st.sampled_from(["\ud800", "a\udfff"]).map(
        lambda bad: Unreadable(
            json.dumps({"type": "req", "id": bad, "method": "config.get"}), INVALID_DATA
        )
    ),
    st.integers(5000, 20000).map(lambda depth: Unreadable("[" * depth + "]" * depth, INVALID_DATA)),
)
batches = st.lists(st.one_of(request_frames, deep_requests, junk), min_size=1, max_size=12)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    database = Path(tmp_path_factory.mktemp("fuzz")) / "gsv.db"
    with threaded_gateway(database, max_size=MAX_SIZE) as running:
        yield running


def _replies_until(ws: ClientConnection, expected: set[str]) -> Counter[str]:
    seen: Counter[str] = Counter()
    while not expected <= set(seen):
        frame = json.loads(ws.recv(timeout=10))
        if frame.get("type") == "res":
            seen[frame["id"]] += 1
    return seen


def _replies_until_closed(ws: ClientConnection) -> tuple[Counter[str], int | None]:
    seen: Counter[str] = Counter()
    try:
        while True:
            frame = json.loads(ws.recv(timeout=10))
            if frame.get("type") == "res":
                seen[frame["id"]] += 1
    except ConnectionClosed as closed:
        return seen, closed.rcvd.code if closed.rcvd is not None else None


def _send_all(ws: ClientConnection, batch: list[Any]) -> set[str]:
    expected: set[str] = set()
    for item in batch:
        if isinstance(item, dict | Written):
            frame_id = str(uuid.uuid4())
            text = (
                item.text(frame_id)
                if isinstance(item, Written)
                else json.dumps({**item, "id": frame_id})
            )
            ws.send(text)
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


@FUZZ
@given(batch=batches, last=st.none() | unreadable)
def test_random_frames_on_a_connected_socket_get_exactly_one_reply_each(
    live: RunningGateway,
    caplog: pytest.LogCaptureFixture,
    batch: list[Any],
    last: Unreadable | None,
) -> None:
    """Every req with an id is answered once and junk is ignored, the socket staying open;
    after an unreadable message the socket closes with its code, no id answered twice."""
    caplog.clear()
    # a channel-mode peer: random config.set calls are refused (403) and change nothing
    with connect(live.url, compression=None, proxy=None, max_size=None) as ws:
        _join_as_channel(ws, "fuzz", live.token)
        expected = _send_all(ws, batch)
        if last is None:
            expected.add("final")
            ws.send(json.dumps({"type": "req", "id": "final", "method": "config.get"}))
            seen, code = _replies_until(ws, expected), None
        else:
            ws.send(last.data, text=True)
            seen, code = _replies_until_closed(ws)
    assert all(count == 1 for count in seen.values()), seen
    if last is None:
        assert set(seen) == expected
    else:
        assert code == last.code and set(seen) <= expected
    assert troubles(caplog.records) == []


@FUZZ
@given(params=json_values | st.fixed_dictionaries({}, optional={
    "minProtocol": json_values, "maxProtocol": json_values, "client": json_values,
    "tools": json_values, "auth": json_values, "nodeRuntime": json_values,
}))  # fmt: skip
def test_random_connect_params_always_get_one_reply(
    live: RunningGateway, caplog: pytest.LogCaptureFixture, params: Any
) -> None:
    """connect with any params answers exactly once: hello-ok or an error code of docs/protocol.md#connect."""
    caplog.clear()
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
    assert reply["ok"] or reply["error"]["code"] in {102, 103, 400, 401, 403}
    assert troubles(caplog.records) == []
    if probe is None:  # a refused credential: the socket was closed after the reply
        assert reply["error"]["code"] in {401, 403}
        return
    # the socket survived; the probe is answered (101 if the handshake failed)
    assert probe["id"] == "probe"
    assert probe["ok"] == reply["ok"]
