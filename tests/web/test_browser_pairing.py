"""The pairing panel: a stranger who wrote to a channel waits there, and Approve lets them
in (the gateway's pairing list empties and the sender is allowed from then on)."""

from __future__ import annotations

from playwright.async_api import Page
from playwright.async_api import expect

from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.channels.test_channel import TestChannel
from tests.waiting import until
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import WebGateway

pytestmark = BROWSER_LOOP


async def stranger_writes(web: WebGateway, sender: str, text: str) -> None:
    await web.call("channel.start", {"channel": "test"})
    adapter = web.gateway.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    await adapter.inject(
        InboundMessage(
            channel="test", account_id="default", peer=Peer("dm", sender, name="Ann"),
            message_id="m1", text=text, sender=Sender(sender, "Ann <b>"),
        )
    )  # fmt: skip


async def test_a_waiting_stranger_is_approved_from_the_page(page: Page, web: WebGateway) -> None:
    await stranger_writes(web, "u-4711", "hello, may I?")

    async def listed() -> dict[str, dict[str, str]]:
        pairs: dict[str, dict[str, str]] = (await web.call("pair.list"))["pairs"]
        return pairs

    # the inbound pipeline runs in its own task
    pairs = await until(listed, "the stranger's pairing request")
    assert [p["senderId"] for p in pairs.values()] == ["u-4711"]
    await page.get_by_test_id("tab-pairing").click()
    item = page.locator('[data-testid="pairing-item"][data-sender-id="u-4711"]')
    await expect(item).to_contain_text("Ann <b>")  # a stranger's name is text, not markup
    await item.get_by_test_id("pairing-approve").click()
    await expect(item).to_have_count(0)
    assert (await web.call("pair.list"))["pairs"] == {}
    allowed = await web.call("config.get", {"path": "channels.test.allowFrom"})
    assert "u-4711" in str(allowed)
