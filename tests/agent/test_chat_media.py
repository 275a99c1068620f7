"""Images sent with `chat.send` (`media`, the web chat's attachments): stored with the
message and shown to the model; anything that is not the image it claims is refused and
nothing is stored."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import GsvError
from gsv_core.gateway.server import RunningGateway
from gsv_core.protocol.schemas.chat import MAX_IMAGE_BYTES
from tests.agent.conftest import KEY
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20


def image(data: bytes, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode()}


async def test_an_image_reaches_the_model_with_the_text(
    client: GatewayClient, log: EventLog, fake: FakeProvider
) -> None:
    sent = await send(client, "what is this?", media=[image(PNG), image(WEBP, "image/webp")])
    await log.ended(sent["runId"])
    (user,) = [m for m in fake.requests[0].messages if m["role"] == "user"]
    blocks = user["content"]
    assert isinstance(blocks, list)
    images = [b for b in blocks if b["type"] == "image"]
    assert [(b["mimeType"], base64.b64decode(b["data"])) for b in images] == [
        ("image/png", PNG), ("image/webp", WEBP)
    ]  # fmt: skip
    assert any(b["type"] == "text" and "what is this?" in b["text"] for b in blocks)


async def test_the_stored_message_keeps_a_reference_not_the_bytes(
    client: GatewayClient, log: EventLog, gw: RunningGateway
) -> None:
    sent = await send(client, "look", media=[image(PNG)])
    await log.ended(sent["runId"])
    history = await client.call("session.preview", {"sessionKey": KEY})
    user = next(m for m in history["messages"] if m["role"] == "user")
    (stored,) = [b for b in user["content"] if b["type"] == "image"]
    assert "data" not in stored and stored["mediaPath"].endswith(".png")


@pytest.mark.parametrize(
    ("media", "says"),
    [
        ([image(b"not an image at all")], "not a image/png image"),
        ([image(PNG, "image/jpeg")], "not a image/jpeg image"),
        ([image(b"RIFF\x10\x00\x00\x00WAVEfmt ", "image/webp")], "not a image/webp image"),
        ([{"type": "image", "mimeType": "image/png", "data": "@@@@not base64"}], "not base64"),
        ([image(PNG, "image/svg+xml")], "mimeType"),  # SVG can carry script: never accepted
        ([{"type": "audio", "mimeType": "image/png", "data": "AAAA"}], "type"),
        ([image(PNG)] * 5, "media"),
        ([], "media"),
        ([image(b"\x89PNG\r\n\x1a\n" + b"\x00" * MAX_IMAGE_BYTES)], "media"),
    ],
)
async def test_bad_images_are_refused_and_nothing_is_stored(
    client: GatewayClient, fake: FakeProvider, media: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(GsvError) as refused:
        await send(client, "look", media=media)
    assert refused.value.code == 400 and says in refused.value.message
    history = await client.call("session.preview", {"sessionKey": KEY})
    assert history["messages"] == [] and fake.requests == []
