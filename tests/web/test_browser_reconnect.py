"""The page after a gateway restart: offline, then connected again by itself (its cookie
still good: the credential is in the database), showing what happened while it was away."""

from __future__ import annotations

from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import WebGateway
from tests.web.conftest import current_session
from tests.web.conftest import messages
from tests.web.conftest import send

pytestmark = BROWSER_LOOP

QUESTION = "a message from another client"
AWAY = "This reply came while the page was away."
# the page's retry backoff decides when it is back
RECONNECT_MS = 30_000


async def test_the_page_reconnects_by_itself_after_a_restart_and_chats_on(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """Stop the gateway: the page goes offline. Start it on the same port and database:
    the page connects again without being touched, and a message sent from it is answered."""
    status = page.get_by_test_id("connection-status")
    port = web.gateway.port
    await web.stop()
    await expect(status).to_have_attribute("data-state", "offline")
    await web.start(port)
    await expect(status).to_have_attribute("data-state", "connected", timeout=RECONNECT_MS)
    llm.enqueue(reply("Still here after the restart."))
    await send(page, "are you back?")
    await expect(messages(page, "assistant").last).to_contain_text("Still here after the restart.")


async def test_after_a_restart_the_page_shows_what_it_missed(
    page: Page, web: WebGateway, llm: FakeLLMServer
) -> None:
    """While the page cannot reach the restarted gateway (its network is cut), another
    client runs a message in the page's session; once the network is back the page
    connects by itself and shows that exchange, marked as missed."""
    status = page.get_by_test_id("connection-status")
    session_key = await current_session(page)
    port = web.gateway.port
    await web.stop()
    await expect(status).to_have_attribute("data-state", "offline")
    # the page stays away until the test lets it back (cut only now: a socket cut while
    # open would hide the gateway's close from the page)
    await page.context.set_offline(True)
    await web.start(port)
    llm.enqueue(reply(AWAY))
    await web.chat(session_key, QUESTION)
    await expect(status).to_have_attribute("data-state", "offline")
    await page.context.set_offline(False)
    await expect(status).to_have_attribute("data-state", "connected", timeout=RECONNECT_MS)
    await expect(page.get_by_test_id("missed")).to_be_visible()
    await expect(messages(page, "user").filter(has_text=QUESTION)).to_have_count(1)
    await expect(messages(page, "assistant").filter(has_text=AWAY)).to_have_count(1)


async def test_a_lost_network_shows_offline_and_the_page_comes_back_by_itself(
    page: Page, llm: FakeLLMServer
) -> None:
    """The browser's network goes (a phone changing networks: the socket goes silent, no
    close arrives, the browser says it is offline): the page shows offline instead of a
    dead "connected", and connects again by itself when the network is back."""
    status = page.get_by_test_id("connection-status")
    await page.context.set_offline(True)
    await expect(status).to_have_attribute("data-state", "offline", timeout=RECONNECT_MS)
    await page.context.set_offline(False)
    await expect(status).to_have_attribute("data-state", "connected", timeout=RECONNECT_MS)
    llm.enqueue(reply("Back on the network."))
    await send(page, "still there?")
    await expect(messages(page, "assistant").last).to_contain_text("Back on the network.")
