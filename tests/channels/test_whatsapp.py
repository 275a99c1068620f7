"""The WhatsApp Cloud API adapter end to end: signed webhook posts to a real gateway's
front door (stdlib http.client), the adapter talking real HTTP to a fake Graph API on
127.0.0.1, and the fake LLM answering."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from gsv_core.channels.whatsapp import WhatsAppChannel
from gsv_core.channels.whatsapp import to_whatsapp
from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.errors import Unauthorized
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.graph_api import ACCESS_TOKEN
from tests.fakes.graph_api import ADA
from tests.fakes.graph_api import APP_SECRET
from tests.fakes.graph_api import CREDENTIALS
from tests.fakes.graph_api import VERIFY_TOKEN
from tests.fakes.graph_api import FakeGraph
from tests.fakes.graph_api import fake_graph
from tests.fakes.graph_api import message
from tests.fakes.graph_api import sign
from tests.fakes.graph_api import status_body
from tests.fakes.graph_api import text_message
from tests.fakes.graph_api import webhook_body
from tests.fakes.provider import FakeProvider
from tests.waiting import until

WEBHOOK = "/channels/whatsapp/webhook"
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 40


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def graph() -> AsyncIterator[FakeGraph]:
    async with fake_graph() as running:
        yield running


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


async def configure(client: GatewayClient, api_url: str, **settings: Any) -> None:
    value = {**CREDENTIALS, "apiBaseUrl": api_url, **settings}
    await client.call("config.set", {"path": "channels.whatsapp", "value": value})


async def start(client: GatewayClient, graph: FakeGraph, **settings: Any) -> None:
    await configure(client, graph.api_url, **settings)
    await client.call("channel.start", {"channel": "whatsapp"})


async def status(client: GatewayClient) -> dict[str, Any]:
    accounts = (await client.call("channel.status", {"channel": "whatsapp"}))["accounts"]
    assert len(accounts) == 1
    found: dict[str, Any] = accounts[0]
    return found


async def post(
    gw: RunningGateway, body: bytes, signature: str | None = "auto"
) -> tuple[int, bytes]:
    """POST a webhook body as Meta does; `signature="auto"` signs it with the app secret."""
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = sign(body) if signature == "auto" else signature
    return await asyncio.to_thread(_http, gw, "POST", WEBHOOK, body, headers)


async def get(gw: RunningGateway, query: dict[str, str]) -> tuple[int, bytes]:
    return await asyncio.to_thread(_http, gw, "GET", f"{WEBHOOK}?{urlencode(query)}", None, {})


def _http(
    gw: RunningGateway, method: str, path: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


async def journal_size(gw: RunningGateway) -> int:
    def count(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT count(*) FROM inbound_journal").fetchone()[0])

    return await gw.gateway.db.read(count)


def user_text(fake: FakeProvider) -> str:
    content = fake.requests[-1].messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


async def test_the_verify_handshake_echoes_the_challenge(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph
) -> None:
    """hub.mode=subscribe with the right verify token echoes hub.challenge; else 403."""
    await start(client, graph)
    hello = {
        "hub.mode": "subscribe",
        "hub.verify_token": VERIFY_TOKEN,
        "hub.challenge": "1158201444",
    }
    assert await get(gw, hello) == (200, b"1158201444")
    wrong = await get(gw, {**hello, "hub.verify_token": "guess"})
    assert wrong[0] == 403 and b"1158201444" not in wrong[1]
    assert (await get(gw, {**hello, "hub.mode": "unsubscribe"}))[0] == 403
    assert (await get(gw, {"hub.challenge": "x"}))[0] == 403


async def test_a_signed_message_is_stored_then_answered(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph, fake: FakeProvider
) -> None:
    """A signed post is journaled before its 200; the reply goes to the sender's number,
    quoting their message, with WhatsApp formatting."""
    await start(client, graph, dmPolicy="open")
    fake.enqueue("**Hi** Ada, see [the docs](https://example.com)")
    inbound = text_message("hello there")
    assert await post(gw, webhook_body(inbound)) == (200, b"ok\n")
    assert await journal_size(gw) == 1  # stored before the answer
    await graph.wait_for(lambda: graph.sent)
    (sent,) = graph.sent
    assert sent["to"] == ADA and sent["type"] == "text"
    assert sent["text"]["body"] == "*Hi* Ada, see the docs (https://example.com)"
    assert sent["context"] == {"message_id": inbound["id"]}
    assert user_text(fake).startswith("[whatsapp · ") and user_text(fake).endswith("hello there")
    ready = await status(client)
    assert ready["connected"] and ready["authenticated"] and ready["mode"] == "webhook"
    assert ready["extra"]["displayPhoneNumber"] == "+1 555-010-0000" and "lastActivity" in ready


@pytest.mark.parametrize(
    "signature",
    [None, "sha256=" + "0" * 64, sign(b"another body"), sign(b"x", "wrong-secret"), "md5=abc"],
    ids=["missing", "zeros", "other-body", "other-secret", "other-scheme"],
)
async def test_bad_signatures_are_refused_and_nothing_is_stored(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph, fake: FakeProvider,
    signature: str | None,
) -> None:  # fmt: skip
    """A post without a valid X-Hub-Signature-256 is 401: nothing journaled, nobody told."""
    await start(client, graph, dmPolicy="open")
    body = webhook_body(text_message("let me in"))
    status_code, _ = await post(gw, body, signature)
    assert status_code == 401
    assert await journal_size(gw) == 0
    assert (await client.call("pair.list"))["pairs"] == {}
    assert graph.sent == [] and fake.requests == []


async def test_an_unknown_sender_must_pair_first(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph, fake: FakeProvider
) -> None:
    """Default policy: one prompt; approval by phone number in any spelling (E.164 match);
    a welcome; then the agent answers."""
    await start(client, graph)
    await post(gw, webhook_body(text_message("hi, it's Ada")))
    await graph.wait_for(lambda: graph.sent)
    assert graph.sent[0]["text"]["body"].startswith("Your message has been received.")
    pairs = (await client.call("pair.list"))["pairs"]
    assert pairs["whatsapp:+15551234567"]["senderName"] == "Ada"
    approved = await client.call(
        "pair.approve", {"channel": "whatsapp", "senderId": "+1 (555) 123-4567"}
    )
    assert approved["senderId"] == "+15551234567"
    await graph.wait_for(lambda: len(graph.sent) == 2)
    assert graph.sent[1]["to"] == ADA and graph.sent[1]["text"]["body"].startswith("You're now")
    fake.enqueue("Hello Ada.")
    await post(gw, webhook_body(text_message("thanks")))
    await graph.wait_for(lambda: len(graph.sent) == 3)
    assert graph.sent[2]["text"]["body"] == "Hello Ada."


async def test_a_long_reply_is_split_under_the_limit(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph, fake: FakeProvider
) -> None:
    """A 9,000-character reply goes out as three messages of at most 4,096 characters;
    only the first quotes the question."""
    await start(client, graph, dmPolicy="open")
    words = " ".join(["word"] * 1800)
    fake.enqueue(words)
    await post(gw, webhook_body(text_message("talk a lot")))
    await graph.wait_for(lambda: len(graph.sent) == 3)
    bodies = [s["text"]["body"] for s in graph.sent]
    assert all(len(b) <= 4096 for b in bodies) and " ".join(bodies) == words
    assert ["context" in s for s in graph.sent] == [True, False, False]


async def test_media_messages_reach_the_model(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph, fake: FakeProvider
) -> None:
    """Image, voice note and document are fetched (media id -> URL -> bytes, with the
    token): the image is shown to the model, the others become notes."""
    await start(client, graph, dmPolicy="open")
    image = graph.add_media(JPEG, "image/jpeg")
    voice = graph.add_media(b"OggS fake voice", "audio/ogg")
    document = graph.add_media(b"%PDF-1.4", "application/pdf")
    body = webhook_body(
        message("image", {"id": image, "mime_type": "image/jpeg", "caption": "look"}),
        message("audio", {"id": voice, "mime_type": "audio/ogg; codecs=opus", "voice": True}),
        message("document", {"id": document, "mime_type": "application/pdf",
                             "filename": "cv.pdf", "caption": "my cv"}),
    )  # fmt: skip
    assert (await post(gw, body))[0] == 200
    await until(lambda: len(fake.requests) == 3 and all(fake.requests), "three runs")
    await graph.wait_for(lambda: len(graph.sent) == 3)
    contents = [r.messages[-1]["content"] for r in fake.requests]
    images = [b for c in contents if isinstance(c, list) for b in c if b["type"] == "image"]
    assert [base64.b64decode(b["data"]) for b in images] == [JPEG]
    texts = "\n".join(c if isinstance(c, str) else json.dumps(c) for c in contents)
    assert "look" in texts and "[Voice message received - transcription unavailable]" in texts
    assert "my cv" in texts and "[Document attached: cv.pdf" in texts
    fetched = [path for method, path in graph.requests if path.startswith("/media/")]
    assert len(fetched) == 3


async def test_receipts_and_garbage_are_handled_without_storing(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph
) -> None:
    """Delivery receipts are acknowledged (200) and ignored; a signed non-JSON body is 400;
    a post while no account runs is 503 so Meta retries later."""
    assert (await post(gw, webhook_body(text_message("too early"))))[0] == 503
    await start(client, graph, dmPolicy="open")
    assert await post(gw, status_body()) == (200, b"ok\n")
    assert (await post(gw, b"{not json"))[0] == 400
    assert await journal_size(gw) == 0 and graph.sent == []


async def test_a_rejected_access_token_is_a_clear_error(
    client: GatewayClient, graph: FakeGraph
) -> None:
    """A token the Graph API refuses fails the start with a clear message and status."""
    await configure(client, graph.api_url, accessToken="EAAG-expired")
    with pytest.raises(Unauthorized, match="whatsapp rejected the access token"):
        await client.call("channel.start", {"channel": "whatsapp"})
    failed = await status(client)
    assert failed["connected"] is False and failed["authenticated"] is False
    assert "whatsapp rejected the access token" in failed["error"]


async def test_wrong_settings_are_named(client: GatewayClient, graph: FakeGraph) -> None:
    """An unknown phone number id is refused by the Graph API; a missing secret or a
    malformed id is refused before any call."""
    await configure(client, graph.api_url, phoneNumberId="123")
    with pytest.raises(InvalidParams, match="whatsapp refused the request: Unsupported get"):
        await client.call("channel.start", {"channel": "whatsapp"})
    calls = len(graph.requests)
    with pytest.raises(InvalidParams, match=r"channels\.whatsapp\.appSecret"):
        await configure(client, graph.api_url, appSecret="")  # no empty secrets stored
    await configure(client, graph.api_url, appSecret=None)
    with pytest.raises(InvalidParams, match=r"channels\.whatsapp\.appSecret"):
        await client.call("channel.start", {"channel": "whatsapp"})
    await configure(client, graph.api_url, phoneNumberId="+1555")
    with pytest.raises(InvalidParams, match="phoneNumberId must be digits"):
        await client.call("channel.start", {"channel": "whatsapp"})
    assert len(graph.requests) == calls


async def test_the_graph_api_is_checked_again_with_backoff(
    client: GatewayClient, gw: RunningGateway
) -> None:
    """The Graph API unreachable at start: the account still takes webhooks, its status
    says why it is not connected, and it checks again after a backoff pause."""
    gate = asyncio.Event()
    pauses: list[float] = []

    async def paced(seconds: float) -> None:
        pauses.append(seconds)
        await gate.wait()

    async with fake_graph() as probe:
        port = probe.port  # nobody listens here once this block ends
    gw.gateway.channels.adapters["whatsapp"] = WhatsAppChannel(sleep=paced)
    await configure(client, f"http://127.0.0.1:{port}/v21.0")
    await client.call("channel.start", {"channel": "whatsapp"})
    down = await status(client)
    assert down["connected"] is False and down["error"].startswith("graph api unreachable")
    await until(lambda: pauses, "a backoff pause")
    assert 0.5 <= pauses[0] <= 1.0
    async with fake_graph(port):
        gate.set()
        await until(lambda: gw.gateway.channels.status("whatsapp")[0].connected, "the check")
    assert (await status(client)).get("error") is None


async def test_secrets_never_reach_logs_or_config_reads(
    gw: RunningGateway, client: GatewayClient, graph: FakeGraph, fake: FakeProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """A session with messages, a refused signature, a refused verify token and media
    logs no secret even at DEBUG; config.get masks them."""
    caplog.set_level(logging.DEBUG)
    await start(client, graph, dmPolicy="open")
    await get(gw, {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1"})
    await get(gw, {"hub.mode": "subscribe", "hub.verify_token": "nope", "hub.challenge": "1"})
    await post(gw, webhook_body(text_message("hi")), "sha256=" + "0" * 64)
    image = graph.add_media(JPEG, "image/jpeg")
    await post(gw, webhook_body(message("image", {"id": image, "mime_type": "image/jpeg"})))
    await graph.wait_for(lambda: graph.sent)
    for secret in (ACCESS_TOKEN, APP_SECRET, VERIFY_TOKEN):
        assert secret not in caplog.text
    read = (await client.call("config.get", {"path": "channels.whatsapp"}))["value"]
    assert {read[k] for k in ("accessToken", "appSecret", "verifyToken")} == {"***"}
    whole = json.dumps(await client.call("config.get"))
    assert all(secret not in whole for secret in (ACCESS_TOKEN, APP_SECRET, VERIFY_TOKEN))


async def test_login_explains_the_cloud_api_setup(client: GatewayClient) -> None:
    """channel.login gives the set-up steps (no QR code), with the webhook URL."""
    result = await client.call("channel.login", {"channel": "whatsapp"})
    assert "qrDataUrl" not in result
    text = result["message"]
    assert "Cloud API" in text and "https://<your gateway>/channels/whatsapp/webhook" in text
    for key in ("accessToken", "phoneNumberId", "appSecret", "verifyToken"):
        assert f"gsv config set channels.whatsapp.{key}" in text


def test_markdown_becomes_whatsapp_formatting() -> None:
    """Bold, italic, strike, headings and links convert; code is left alone."""
    assert to_whatsapp("# Title\n**b** *i* ~~s~~ [x](https://a.b) `**raw**`\n```\n*keep*\n```") == (
        "*Title*\n*b* _i_ ~s~ x (https://a.b) `**raw**`\n```\n*keep*\n```"
    )
