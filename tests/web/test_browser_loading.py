"""A message typed while the page is still loading its session (just connected, the
history not yet arrived) stays in the transcript once the history lands."""

from __future__ import annotations

import json
import re

from playwright.async_api import Page
from playwright.async_api import WebSocketRoute
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import DESKTOP
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway
from tests.web.conftest import messages

pytestmark = BROWSER_LOOP

TYPED = "typed before the history arrived"


class HeldPreview:
    """Sits on the page's WebSocket (Playwright's route) and holds the gateway's answer to
    the page's first `session.preview` until released: the session's history is late."""

    def __init__(self) -> None:
        self.asked: set[object] = set()
        self.held: list[str | bytes] = []
        self.releasing = False

    def route(self, page_side: WebSocketRoute) -> None:
        server = page_side.connect_to_server()

        def from_page(message: str | bytes) -> None:
            frame = _frame(message)
            if frame.get("method") == "session.preview" and not self.releasing:
                self.asked.add(frame.get("id"))
            server.send(message)

        def from_server(message: str | bytes) -> None:
            if not self.releasing and _frame(message).get("id") in self.asked:
                self.held.append(message)
                return
            page_side.send(message)

        page_side.on_message(from_page)
        server.on_message(from_server)
        self._page_side = page_side

    def release(self) -> None:
        self.releasing = True
        for message in self.held:
            self._page_side.send(message)


def _frame(message: str | bytes) -> dict[str, object]:
    if isinstance(message, bytes):
        return {}
    frame = json.loads(message)
    return frame if isinstance(frame, dict) else {}


async def test_a_message_sent_while_the_session_loads_stays_shown(
    pages: Pages, web: WebGateway, llm: FakeLLMServer
) -> None:
    """Connected but the history still on its way: a message typed now is sent (at once or
    once the session shows) and, after the history arrives, shown once with its reply."""
    page: Page = await pages.new(viewport=DESKTOP)
    preview = HeldPreview()
    await page.route_web_socket(re.compile(r"/ws$"), preview.route)
    await page.goto(await web.sign_in_link())
    await expect(page.get_by_test_id("connection-status")).to_have_attribute(
        "data-state", "connected"
    )
    transcript = page.get_by_test_id("transcript")
    await expect(transcript).to_be_empty()  # the history has not arrived
    llm.enqueue(reply("Got it."))
    await page.get_by_test_id("composer").fill(TYPED)
    # a page may send at once or hold Send until the session is shown: either is fine,
    # losing the message is not
    send = page.get_by_test_id("send")
    sent_early = await send.is_enabled()
    if sent_early:
        await send.click()
        await expect(messages(page, "user").filter(has_text=TYPED)).to_have_count(1)
    preview.release()
    await expect(transcript).not_to_be_empty()
    if not sent_early:
        await send.click()
    await expect(transcript).to_contain_text("Got it.")
    await expect(messages(page, "user").filter(has_text=TYPED)).to_have_count(1)
    await expect(messages(page, "assistant").filter(has_text="Got it.")).to_have_count(1)
