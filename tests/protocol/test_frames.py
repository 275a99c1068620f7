"""parse_frame / encode_* table tests, the binary frame layout, and a hypothesis fuzz."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gsv_core.errors import NotFound
from gsv_core.protocol.frames import EncodedEvent
from gsv_core.protocol.frames import EventFrame
from gsv_core.protocol.frames import FrameError
from gsv_core.protocol.frames import RequestFrame
from gsv_core.protocol.frames import ResponseFrame
from gsv_core.protocol.frames import encode_binary_frame
from gsv_core.protocol.frames import encode_error
from gsv_core.protocol.frames import encode_event
from gsv_core.protocol.frames import encode_frame
from gsv_core.protocol.frames import encode_request
from gsv_core.protocol.frames import encode_response
from gsv_core.protocol.frames import parse_binary_frame
from gsv_core.protocol.frames import parse_frame

VALID = [
    ('{"type":"req","id":"1","method":"config.get"}', RequestFrame("1", "config.get")),
    (
        '{"type":"req","id":"a","method":"config.get","params":{"path":"model"}}',
        RequestFrame("a", "config.get", {"path": "model"}),
    ),
    ('{"type":"req","id":7,"method":"x"}', RequestFrame(7, "x")),
    ('{"type":"res","id":"1","ok":true,"payload":{"a":1}}', ResponseFrame("1", True, {"a": 1})),
    ('{"type":"res","id":"1","ok":true}', ResponseFrame("1", True)),
    (
        '{"type":"res","id":"1","ok":false,"error":{"code":404,"message":"no"}}',
        ResponseFrame("1", False, None, {"code": 404, "message": "no"}),
    ),
    (
        '{"type":"evt","event":"chat","payload":{"state":"delta"},"seq":3}',
        EventFrame("chat", {"state": "delta"}, 3),
    ),
    ('{"type":"evt","event":"chat"}', EventFrame("chat")),
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_valid_frames_parse_to_their_frame_objects(text: str, expected: object) -> None:
    """Every frame shape of docs/protocol.md#frames parses to the matching dataclass."""
    assert parse_frame(text) == expected


# (text, reply_id): reply_id is the id the peer is owed a 400 under, or None
INVALID = [
    ("not json", None),
    ("[1,2]", None),
    ('"req"', None),
    ("{}", None),
    ('{"type":"hello"}', None),
    ('{"type":"req","method":"x"}', None),
    ('{"type":"req","id":"","method":"x"}', None),
    ('{"type":"req","id":true,"method":"x"}', None),
    ('{"type":"req","id":"9"}', "9"),
    ('{"type":"req","id":"9","method":""}', "9"),
    ('{"type":"req","id":"9","method":42}', "9"),
    ('{"type":"res","id":"1"}', None),
    ('{"type":"res","id":"1","ok":false}', None),
    ('{"type":"res","id":"1","ok":false,"error":{"code":"x","message":"m"}}', None),
    ('{"type":"evt"}', None),
    ('{"type":"evt","event":"chat","seq":"1"}', None),
    ('{"type":"evt","event":"chat","seq":true}', None),
]


@pytest.mark.parametrize(("text", "reply_id"), INVALID)
def test_invalid_frames_raise_frame_error_with_the_right_reply_id(
    text: str, reply_id: object
) -> None:
    """Bad frames raise FrameError; only a req with a usable id is owed a reply."""
    with pytest.raises(FrameError) as caught:
        parse_frame(text)
    assert caught.value.reply_id == reply_id


def test_encoders_leave_out_absent_fields() -> None:
    """Optional fields are omitted, never sent as null."""
    assert json.loads(encode_request("1", "tools.list")) == {
        "type": "req",
        "id": "1",
        "method": "tools.list",
    }
    assert json.loads(encode_response("1")) == {"type": "res", "id": "1", "ok": True}
    assert json.loads(encode_event("chat")) == {"type": "evt", "event": "chat"}
    assert json.loads(encode_error("1", NotFound("gone"))) == {
        "type": "res",
        "id": "1",
        "ok": False,
        "error": {"code": 404, "message": "gone"},
    }


@pytest.mark.parametrize(("text", "frame"), VALID)
def test_encode_frame_round_trips_valid_frames(text: str, frame: object) -> None:
    """encode_frame(parse_frame(x)) parses back to the same frame."""
    assert parse_frame(encode_frame(frame)) == frame  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        ' \n{"type":"evt","event":"chat"}',
        '{"type":"evt","event":"chat"}\r\n ',
        b'{"type":"evt","event":"chat"}',
    ],
)
def test_whitespace_around_a_frame_and_bytes_parse_as_json_loads_reads_them(
    text: str | bytes,
) -> None:
    """The fast path takes a str holding exactly one value; other input still parses
    as json.loads reads it."""
    assert parse_frame(text) == EventFrame("chat")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"type":"evt","event":"chat"}x', "Extra data: line 1 column 30"),
        ('{"type":"evt","event":', "Expecting value: line 1 column 23"),
        ("", "Expecting value: line 1 column 1"),
        ("nul", "Expecting value: line 1 column 1"),
    ],
)
def test_bad_json_is_a_frame_error_in_json_s_words(text: str, words: str) -> None:
    with pytest.raises(FrameError, match=f"invalid JSON: {words}") as caught:
        parse_frame(text)
    assert caught.value.reply_id is None


ENCODED_VALUES = [
    {"tool": "n__Read", "args": {"path": 'caf\u00e9 \u2028 "q"\n\t\\'}},
    {"n": [1, -2.5, 1e300, None, True, False, float("inf")], "": {}, "e": []},
    {"\U0001f600": "\x00\x1f", "nested": {"a": [{"b": [[]]}]}},
]


@pytest.mark.parametrize("params", ENCODED_VALUES)
def test_encoders_write_what_compact_json_dumps_writes(params: dict[str, object]) -> None:
    """The encoder made once (no new encoder per frame) writes byte for byte what
    `json.dumps(..., separators=(",", ":"), ensure_ascii=False)` writes."""
    expected = {"type": "req", "id": "1", "method": "m", "params": params}
    assert encode_request("1", "m", params) == json.dumps(
        expected, separators=(",", ":"), ensure_ascii=False
    )


@pytest.mark.parametrize("payload", [*ENCODED_VALUES, None, [], "text", 0])
def test_an_event_encoded_once_for_many_peers_is_what_each_would_encode(payload: object) -> None:
    """A broadcast's EncodedEvent gives each peer's seq the text encode_event gives, and
    its JSON parses back to the same event."""
    shared = EncodedEvent("chat", payload)
    for seq in (1, 2, 41):
        text = shared.frame(seq)
        assert text == encode_event("chat", payload, seq)
        assert parse_frame(text) == EventFrame("chat", payload, seq)


def test_encoders_refuse_circular_and_unknown_values_as_json_does() -> None:
    """A circular payload is a ValueError and an unknown type a TypeError naming it,
    as from json.dumps (a response encoder turns both into a 500)."""
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        encode_event("e", loop)
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        encode_response("1", {"x": {1}})
    assert encode_event("e", {"ok": 1}) == '{"type":"evt","event":"e","payload":{"ok":1}}'


def test_binary_frames_are_a_little_endian_id_then_the_chunk() -> None:
    """A binary frame (docs/protocol.md#frames): bytes 0..3 = transfer id (u32 LE), then raw data."""
    data = encode_binary_frame(0x01020304, b"abc")
    assert data == b"\x04\x03\x02\x01abc"
    assert parse_binary_frame(data) == (0x01020304, b"abc")
    assert parse_binary_frame(b"\x01\x00\x00\x00") == (1, b"")
    with pytest.raises(FrameError):
        parse_binary_frame(b"\x01\x00")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
frame_like = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["req", "res", "evt", "x"]) | json_values,
        "id": st.text(max_size=5) | st.integers() | json_values,
        "method": st.text(max_size=12) | json_values,
        "params": json_values,
        "ok": json_values,
        "error": json_values,
        "event": json_values,
        "seq": json_values,
        "payload": json_values,
    },
)


@given(st.one_of(st.text(), st.binary(), frame_like.map(json.dumps), json_values.map(json.dumps)))
def test_parse_frame_never_fails_except_with_frame_error(data: str | bytes) -> None:
    """Any input either parses to a frame or raises FrameError: nothing else escapes."""
    try:
        frame = parse_frame(data)
    except FrameError as exc:
        assert exc.reply_id is None or isinstance(exc.reply_id, str | int)
    else:
        assert isinstance(frame, RequestFrame | ResponseFrame | EventFrame)
