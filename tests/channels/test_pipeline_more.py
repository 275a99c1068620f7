"""More of the channel pipeline on a real gateway: background exec completions and
gsv__Message defaults, pairing expiry on an injected clock, voice
notes transcribed by a fake OpenAI-compatible endpoint, the envelope's time zone, the
pairing welcome through an external adapter, and an adapter whose start crashes."""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import time
from collections.abc import AsyncIterator
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.channels.base import ChannelSink
from gsv_core.channels.base import Media
from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.errors import NotFound
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.pairing import WELCOME
from tests.channels.test_pipeline import dm
from tests.channels.test_pipeline import open_policy
from tests.channels.test_pipeline import until
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.fakes.quiet_http import QuietHTTPServer
from tests.transfers.nodes import node
from tests.wire import handshake
from tests.wire import open_raw

HOUR_MS = 3_600_000
VOICE = b"OggS" + b"\x00" * 64  # the fake endpoint never decodes it


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
def clock() -> list[int]:
    """The gateway's clock (epoch ms); a test moves it by assigning clock[0]."""
    return [int(time.time() * 1000)]


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider, clock: list[int]) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory,
                          now_ms=lambda: clock[0])  # fmt: skip
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


@pytest.fixture
async def test_channel(gw: RunningGateway, client: GatewayClient) -> TestChannel:
    await client.call("channel.start", {"channel": "test"})
    adapter = gw.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    return adapter


def user_text(fake: FakeProvider, index: int = 0) -> str:
    """The last user message of the model's `index`th request, as text."""
    content = fake.requests[index].messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b.get("type") == "text")


# -- runs started from a channel --------------------------------------------------------


async def test_a_background_exec_completion_answers_the_channel_peer(
    gw: RunningGateway, client: GatewayClient, test_channel: TestChannel, fake: FakeProvider,
    tmp_path: Path,
) -> None:  # fmt: skip
    """A Bash command an owner's channel run sent to the background ends later; the
    run that its completion wakes replies to the same channel peer."""
    await open_policy(client, owners=("u1",))
    fake.enqueue(call("n1__Bash", {"command": "echo bg-finished", "background": True}, "bg"))
    fake.enqueue("Started it.")
    fake.enqueue("It finished: bg-finished.")
    async with node(gw.url, tmp_path / "n1", "n1"):
        await test_channel.inject(dm("run it in the background", "m1"))
        await until(lambda: len(test_channel.texts("u1")) == 2, "the completion's reply")
    assert test_channel.texts("u1") == ["Started it.", "It finished: bg-finished."]
    woken = user_text(fake, 2)
    assert woken.startswith("System event: async_exec_completion") and "bg-finished" in woken


async def test_message_defaults_to_its_own_sessions_peer_after_another_session_ran(
    gw: RunningGateway, client: GatewayClient, test_channel: TestChannel, fake: FakeProvider,
    clock: list[int],
) -> None:  # fmt: skip
    """After a cron task delivered to another peer (another session, run
    through the RPC), gsv__Message without a target from the main session still goes to
    the owner the main session last heard from."""
    await open_policy(client, owners=("u1",))
    fake.enqueue("Hi Ann.")
    await test_channel.inject(dm("hello", "m1"))
    await until(lambda: test_channel.texts("u1") == ["Hi Ann."], "the answer to Ann")
    fake.enqueue("For Bob.")
    job = {"name": "bob", "schedule": {"kind": "at", "atMs": clock[0] + HOUR_MS},
           "spec": {"mode": "task", "message": "tell Bob", "channel": "test", "to": "u7"}}  # fmt: skip
    added = (await client.call("cron.add", job))["job"]
    ran = await client.call("cron.run", {"id": added["id"], "mode": "force"})
    assert ran["results"][0]["status"] == "ok"
    await until(lambda: test_channel.texts("u7") == ["For Bob."], "the cron delivery to Bob")
    fake.enqueue(call("gsv__Message", {"text": "a note for you"}))
    fake.enqueue("sent")
    await client.call("chat.send", {"sessionKey": "main", "message": "message Ann"})
    await until(lambda: "a note for you" in test_channel.texts("u1"), "the note to Ann")
    assert test_channel.texts("u7") == ["For Bob."], "Bob got nothing more"


# -- pairing ----------------------------------------------------------------------------


async def test_pairing_requests_expire_after_the_ttl(
    gw: RunningGateway, client: GatewayClient, test_channel: TestChannel, clock: list[int]
) -> None:
    """pairing.ttlHours: a request lives that long; then it is gone from pair.list, cannot
    be approved, and the sender's next message asks again."""
    inbox = gw.gateway.channels.inbox
    await client.call("config.set", {"path": "pairing.ttlHours", "value": 2})
    assert (await inbox.receive(dm("hello?", "m1"), wait=True))["status"] == "pending_pairing"
    clock[0] += 2 * HOUR_MS - 1
    assert list((await client.call("pair.list"))["pairs"]) == ["test:u1"]
    await inbox.receive(dm("still there?", "m2"), wait=True)
    assert len(test_channel.texts("u1")) == 1, "a live request is not asked again"
    clock[0] += 1  # exactly the time to live: list and approve agree it has expired
    assert (await client.call("pair.list"))["pairs"] == {}
    with pytest.raises(NotFound, match="No pending pairing for test:u1"):
        await client.call("pair.approve", {"channel": "test", "senderId": "u1"})
    await inbox.receive(dm("anyone?", "m3"), wait=True)
    assert len(test_channel.texts("u1")) == 2, "a new prompt"
    pairs = (await client.call("pair.list"))["pairs"]
    assert pairs["test:u1"]["firstMessage"] == "anyone?"


async def next_outbound(ws: ClientConnection) -> dict[str, Any]:
    """The next channel.outbound event (responses and other events are skipped)."""
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("type") == "evt" and frame.get("event") == "channel.outbound":
            payload: dict[str, Any] = frame["payload"]
            return payload


async def test_the_pairing_welcome_reaches_an_external_adapter(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """An external (WebSocket, channel mode) adapter's unknown sender gets the prompt, and
    after pair.approve the welcome, both as channel.outbound to that peer."""
    async with await open_raw(gw.url) as ws:
        await handshake(ws, mode="channel", client_id="bridge", channel="ext", account_id="a1")
        inbound = {"channel": "ext", "accountId": "a1", "peer": {"kind": "dm", "id": "p1"},
                   "sender": {"id": "p1", "name": "Pat"},
                   "message": {"id": "x1", "text": "hi"}}  # fmt: skip
        # the prompt may go out before the answer to channel.inbound: read frames in order
        frame = {"type": "req", "id": "in-1", "method": "channel.inbound", "params": inbound}
        await ws.send(json.dumps(frame))
        prompt = await next_outbound(ws)
        assert "Awaiting approval" in prompt["message"]["text"]
        assert (await client.call("pair.list"))["pairs"]["ext:p1"]["firstMessage"] == "hi"
        approved = await client.call("pair.approve", {"channel": "ext", "senderId": "p1"})
        assert approved["approved"] is True
        welcome = await next_outbound(ws)
    assert welcome["message"]["text"] == WELCOME
    assert welcome["peer"]["id"] == "p1" and welcome["accountId"] == "a1"


# -- what the model reads ---------------------------------------------------------------


async def test_the_envelope_shows_the_users_time_zone(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider
) -> None:
    """userTimezone Asia/Tokyo: a message sent at 00:30 UTC is stamped 9:30 AM JST."""
    await open_policy(client)
    await client.call("config.set", {"path": "userTimezone", "value": "Asia/Tokyo"})
    sent_at = dt.datetime(2026, 1, 1, 0, 30, tzinfo=dt.UTC)
    await test_channel.inject(
        dm("what time is it?", "m1", timestamp=int(sent_at.timestamp() * 1000))
    )
    await until(lambda: test_channel.texts("u1"), "the answer")
    assert user_text(fake).startswith("[test · 9:30 AM JST · Ann (guest)] what time is it?")


@dataclass
class FakeTranscriber:
    """An OpenAI-compatible `/v1/audio/transcriptions` on 127.0.0.1 that records requests."""

    text: str = "buy milk on the way home"
    requests: list[dict[str, Any]] = field(default_factory=list)
    server: QuietHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def transcriber() -> Iterator[FakeTranscriber]:
    fake = FakeTranscriber()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                  "body": body})  # fmt: skip
            found = self.path.endswith("/audio/transcriptions")
            payload = json.dumps({"text": f" {fake.text} "} if found else {"error": "no route"})
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload.encode())

    fake.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        thread.join(10)


def voice_note(msg_id: str) -> Any:
    media = (Media("audio", "audio/ogg", data=base64.b64encode(VOICE).decode()),)
    return dm("", msg_id, media=media)


async def test_a_voice_note_is_transcribed_for_the_model(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider,
    transcriber: FakeTranscriber,
) -> None:  # fmt: skip
    """With transcription.provider configured (base URL and key), the model reads the
    transcription of a voice note; the audio went to the endpoint with that key."""
    await open_policy(client)
    provider = {"baseUrl": transcriber.base_url, "apiKey": "sk-config"}
    await client.call("config.set", {"path": "providers.speech", "value": provider})
    await client.call("config.set", {"path": "transcription.provider", "value": "speech"})
    await test_channel.inject(voice_note("v1"))
    await until(lambda: test_channel.texts("u1"), "the answer")
    assert "[Voice message transcription: buy milk on the way home]" in user_text(fake)
    [sent] = transcriber.requests
    assert sent["path"] == "/v1/audio/transcriptions" and sent["auth"] == "Bearer sk-config"
    assert VOICE in sent["body"] and b"whisper-1" in sent["body"]


async def test_transcription_finds_the_key_in_the_environment(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider,
    transcriber: FakeTranscriber, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Like the model providers, transcription with `openai` falls back to OPENAI_API_KEY
    when the config holds no key."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    await open_policy(client)
    await client.call("config.set", {"path": "providers.openai",
                                     "value": {"baseUrl": transcriber.base_url}})  # fmt: skip
    await test_channel.inject(voice_note("v1"))
    await until(lambda: test_channel.texts("u1"), "the answer")
    assert "[Voice message transcription: buy milk on the way home]" in user_text(fake)
    assert [r["auth"] for r in transcriber.requests] == ["Bearer sk-from-env"]


async def test_without_a_usable_provider_the_model_gets_a_placeholder(
    client: GatewayClient, test_channel: TestChannel, fake: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """No key anywhere for the transcription provider: no request, a clear placeholder."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    await open_policy(client)
    await test_channel.inject(voice_note("v1"))
    await until(lambda: test_channel.texts("u1"), "the answer")
    assert "[Voice message received - transcription unavailable]" in user_text(fake)


# -- adapters ---------------------------------------------------------------------------


@dataclass
class CrashingChannel(TestChannel):
    """An in-process adapter whose start fails with a plain exception."""

    __test__ = False
    name: str = "crashy"

    async def start(self, account_id: str, config: dict[str, Any], sink: ChannelSink) -> None:
        raise RuntimeError("the socket library blew up")


async def test_an_adapter_crashing_on_start_is_a_500_with_its_message(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """channel.start of an adapter raising a non-GsvError: 500 naming the channel and the
    cause; no account is left running."""
    gw.gateway.channels.adapters["crashy"] = CrashingChannel()
    with pytest.raises(GsvError) as raised:
        await client.call("channel.start", {"channel": "crashy"})
    assert raised.value.code == 500
    assert raised.value.message == "crashy failed to start: the socket library blew up"
    status = await client.call("channel.status", {"channel": "crashy"})
    assert status["accounts"] == []
