"""`/search QUERY` in the web chat over `memory.search`: hits show the session key, time
and snippet as text; clicking one opens its session; hostile text stays text; no query
and a query without words are answered with a line."""

from __future__ import annotations

import re

from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway
from tests.web.conftest import messages
from tests.web.conftest import send
from tests.web.conftest import sign_in

pytestmark = BROWSER_LOOP

KITCHEN = "agent:main:kitchen"
HOSTILE = '<img src=x onerror="window.__x=1"> **bold** fridge'


async def test_a_hit_opens_its_session(pages: Pages, web: WebGateway, llm: FakeLLMServer) -> None:
    """A word said in another session is found; clicking the hit opens that session."""
    llm.enqueue(reply("The spare key is under the fridge."))
    await web.chat(KITCHEN, "where is the spare key?")
    page = await pages.new()
    await sign_in(page, web)
    await send(page, "/search spare key")
    hits = page.get_by_test_id("search-results").last.get_by_test_id("search-hit")
    await expect(hits).to_have_count(2)
    await expect(hits.first).to_contain_text(f"{KITCHEN} · ")
    await expect(hits.filter(has_text="under the fridge")).to_have_count(1)
    await hits.filter(has_text="under the fridge").click()
    await expect(page.get_by_test_id("current-session")).to_contain_text(KITCHEN)
    answer = messages(page, "assistant").filter(has_text="The spare key is under the fridge.")
    await expect(answer).to_have_count(1)
    await expect(answer).to_have_class(re.compile(r"\bfound\b"))


async def test_an_archived_hit_says_where_it_is(
    pages: Pages, web: WebGateway, llm: FakeLLMServer
) -> None:
    """After a reset the hit's session opens without it, and the page says so."""
    llm.enqueue(reply("The boat is moored at pier nine."))
    await web.chat(KITCHEN, "where is the boat?")
    await web.call("session.reset", {"sessionKey": KITCHEN})
    page = await pages.new()
    await sign_in(page, web)
    await send(page, "/search moored")
    hit = page.get_by_test_id("search-results").last.get_by_test_id("search-hit")
    await expect(hit).to_contain_text("(archived)")
    await hit.click()
    await expect(page.get_by_test_id("current-session")).to_contain_text(KITCHEN)
    notice = messages(page, "system").filter(has_text="no longer in this session's history")
    await expect(notice).to_contain_text("archived in sessions/")


async def test_hostile_snippets_are_text(page: Page, web: WebGateway, llm: FakeLLMServer) -> None:
    """HTML in a hit shows as written; no element is made of it and nothing runs."""
    llm.enqueue(reply("ok"))
    await web.chat(KITCHEN, HOSTILE)
    await send(page, "/search fridge")
    hit = page.get_by_test_id("search-results").last.get_by_test_id("search-hit")
    await expect(hit).to_have_count(1)
    await expect(hit).to_contain_text('<img src=x onerror="window.__x=1"> bold fridge')
    assert await page.get_by_test_id("search-results").locator("img").count() == 0
    assert await page.evaluate("window.__x") is None


async def test_bad_queries_get_a_line(page: Page) -> None:
    """No query: the usage; punctuation only: the gateway's refusal, as an error line."""
    await send(page, "/search")
    await expect(messages(page, "error").filter(has_text="Usage: /search QUERY")).to_have_count(1)
    await send(page, "/search !!! ???")
    await expect(messages(page, "error").filter(has_text="Cannot search: ")).to_have_count(1)
