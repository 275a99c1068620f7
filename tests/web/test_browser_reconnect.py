"""The page after a gateway restart: offline, then connected again by itself, showing
what happened in its session while it was away."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.fakes.llm_server import FakeLLMServer, reply
from tests.web.conftest import BROWSER_LOOP, WebGateway, current_session, messages

AWAY = "This reply came while the page was away."

pytestmark = BROWSER_LOOP


async def test_the_page_reconnects_after_a_restart_and_shows_what_it_missed(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """Stop the gateway: the page goes offline. Start it on the same port and database and
    run a message in the page's session from another client: the page connects again on
    its own and shows that reply (or its "missed" notice)."""
    status = page.get_by_test_id("connection-status")
    session_key = await current_session(page)
    port = web.gateway.port
    await web.stop()
    await expect(status).to_have_attribute("data-state", "offline")
    await web.start(port)
    llm.enqueue(reply(AWAY))
    await web.chat(session_key, "a message from another client")
    # the page's retry backoff decides when; the cookie is still good after the restart
    await expect(status).to_have_attribute("data-state", "connected", timeout=30_000)
    shown = page.get_by_test_id("missed").or_(messages(page, "assistant").filter(has_text=AWAY))
    await expect(shown.first).to_be_visible()
