"""Switching sessions in the page: each shows its own history."""

from __future__ import annotations

from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.waiting import until
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import DESKTOP
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway
from tests.web.conftest import messages
from tests.web.conftest import sign_in

APPLES = ("agent:main:apples", "Apples are red.")
PEARS = ("agent:main:pears", "Pears are green.")

pytestmark = BROWSER_LOOP


async def open_session(page: Page, key: str) -> None:
    """Open a session from the sessions panel, as a user would."""
    await page.get_by_test_id("tab-sessions").click()
    panel = page.get_by_test_id("panel-sessions")
    await expect(panel).to_be_visible()
    item = panel.locator(f'[data-testid="session-item"][data-key="{key}"]')
    await item.get_by_test_id("session-open").click()
    await expect(page.get_by_test_id("current-session")).to_contain_text(key)


async def test_opening_another_session_shows_its_history(
    pages: Pages, web: WebGateway, llm: FakeLLMServer
) -> None:
    """Two sessions with different histories (written by another client before the page
    opens): opening one from panel-sessions shows its messages and not the other's."""
    for key, answer in (APPLES, PEARS):
        llm.enqueue(reply(answer))
        await web.chat(key, f"tell me about {key.rsplit(':', 1)[1]}")
    page = await pages.new(viewport=DESKTOP)
    await sign_in(page, web)
    transcript = page.get_by_test_id("transcript")
    for (key, answer), (_, other) in ((APPLES, PEARS), (PEARS, APPLES)):
        await open_session(page, key)
        await page.get_by_test_id("tab-chat").click()
        await expect(messages(page, "assistant").filter(has_text=answer)).to_have_count(1)
        question = f"tell me about {key.rsplit(':', 1)[1]}"
        await expect(messages(page, "user").filter(has_text=question)).to_have_count(1)
        await expect(transcript).not_to_contain_text(other)


async def test_the_sessions_panel_searches_labels_and_resets(
    pages: Pages, web: WebGateway, llm: FakeLLMServer
) -> None:
    """Search narrows the list by key; a label typed in the panel is stored by the gateway
    and found by search; Reset empties the session on the gateway."""
    for key, answer in (APPLES, PEARS):
        llm.enqueue(reply(answer))
        await web.chat(key, f"tell me about {key.rsplit(':', 1)[1]}")
    page = await pages.new(viewport=DESKTOP)
    await sign_in(page, web)
    await page.get_by_test_id("tab-sessions").click()
    panel = page.get_by_test_id("panel-sessions")
    search, items = panel.get_by_test_id("session-search"), panel.get_by_test_id("session-item")
    await search.fill("pear")
    await expect(items).to_have_count(1)
    await expect(items).to_have_attribute("data-key", PEARS[0])
    await search.fill("")
    pears = panel.locator(f'[data-testid="session-item"][data-key="{PEARS[0]}"]')
    await pears.get_by_test_id("session-label").fill("fruit notes")
    await pears.get_by_test_id("session-label").press("Enter")
    # the panel's text (not the input's value) names the label once the gateway took it
    await expect(panel).to_contain_text("fruit notes")
    await search.fill("fruit")
    await expect(items).to_have_count(1)
    assert (await web.call("session.get", {"sessionKey": PEARS[0]})).get("label") == "fruit notes"
    await search.fill("")
    await pears.get_by_test_id("session-reset").click()
    await expect(pears).to_contain_text("0 messages")
    assert (await web.call("session.get", {"sessionKey": PEARS[0]}))["messageCount"] == 0
    apples = await web.call("session.get", {"sessionKey": APPLES[0]})
    assert apples["messageCount"] == 2, "only the session reset was emptied"


def _watching(web: WebGateway) -> list[frozenset[str] | None]:
    """What each browser socket of the gateway follows (`chat.subscribe`)."""
    clients = web.gateway.gateway.registry.clients.values()
    return [peer.watching for peer in clients if peer.browser is not None]


async def test_the_page_follows_only_the_session_it_shows(
    pages: Pages, web: WebGateway, llm: FakeLLMServer
) -> None:
    """The tab asks the gateway for its own session's events only, again when another
    session is opened; another session's reply is not sent to it and not shown."""
    for key, answer in (APPLES, PEARS):
        llm.enqueue(reply(answer))
        await web.chat(key, f"tell me about {key.rsplit(':', 1)[1]}")
    page = await pages.new(viewport=DESKTOP)
    await sign_in(page, web)
    await open_session(page, APPLES[0])
    await until(lambda: _watching(web) == [frozenset({APPLES[0]})], "the page to follow apples")
    await open_session(page, PEARS[0])
    await until(lambda: _watching(web) == [frozenset({PEARS[0]})], "the page to follow pears")
    await page.get_by_test_id("tab-chat").click()
    llm.enqueue(reply("Apples again, unseen."))
    await web.chat(APPLES[0], "and now?")
    await expect(messages(page, "assistant").filter(has_text=PEARS[1])).to_have_count(1)
    await expect(page.get_by_test_id("transcript")).not_to_contain_text("unseen")
