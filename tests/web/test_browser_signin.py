"""Signing in to the web chat with a one-time link, and the WebSocket refusing pages of
other origins (docs/web.md, Signing in and Origins)."""

from __future__ import annotations

import pytest
from playwright.async_api import expect
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway

COOKIE = "gsv_web"
# what a page's script gets when it opens a WebSocket to `url`
OPEN_SOCKET = """url => new Promise(done => {
    const ws = new WebSocket(url);
    ws.onopen = () => { ws.close(); done("open"); };
    ws.onerror = () => done("refused");
})"""

pytestmark = BROWSER_LOOP


async def test_a_one_time_link_signs_in_with_an_httponly_strict_cookie(
    pages: Pages, web: WebGateway
) -> None:
    """The link sets the session cookie (HttpOnly, SameSite=Strict, out of the page's reach)
    and lands on `/`, connected."""
    page = await pages.new()
    await page.goto(await web.sign_in_link())
    await expect(page).to_have_url(f"{web.http_url}/")
    await expect(page.get_by_test_id("connection-status")).to_have_attribute(
        "data-state", "connected"
    )
    cookies = {cookie["name"]: cookie for cookie in await page.context.cookies()}
    assert COOKIE in cookies, f"no {COOKIE} cookie among {sorted(cookies)}"
    cookie = cookies[COOKIE]
    assert cookie.get("httpOnly") is True
    assert cookie.get("sameSite") == "Strict"
    assert cookie.get("path") == "/"
    assert COOKIE not in await page.evaluate("document.cookie")


async def test_a_used_link_is_refused_and_does_not_sign_in(pages: Pages, web: WebGateway) -> None:
    """The same link a second time (another browser) gets a 401 page and no cookie; `/`
    then shows the signed-out screen."""
    link = await web.sign_in_link()
    page = await pages.new()
    await page.goto(link)
    await expect(page.get_by_test_id("connection-status")).to_have_attribute(
        "data-state", "connected"
    )
    await page.context.close()
    late = await pages.new()
    response = await late.goto(link)
    assert response is not None and response.status == 401
    assert [c["name"] for c in await late.context.cookies()] == []
    await late.goto(f"{web.http_url}/")
    await expect(late.get_by_test_id("signed-out")).to_be_visible()


@pytest.mark.parametrize("query", ["", "?code=", "?code=not-a-code"])
async def test_a_page_without_a_cookie_shows_how_to_sign_in(
    pages: Pages, web: WebGateway, query: str
) -> None:
    """No cookie (or a wrong code): `/auth` answers 401, and `/` shows the signed-out screen,
    never a connected chat."""
    page = await pages.new()
    if query:
        response = await page.goto(f"{web.http_url}/auth{query}")
        assert response is not None and response.status == 401
    await page.goto(f"{web.http_url}/")
    await expect(page.get_by_test_id("signed-out")).to_be_visible()
    await expect(page.get_by_test_id("connection-status")).not_to_have_attribute(
        "data-state", "connected"
    )


async def test_a_page_of_another_origin_cannot_open_the_websocket(
    pages: Pages, web: WebGateway, llm: FakeLLMServer
) -> None:
    """A page served from another port of the same machine (the same site: the browser sends
    the cookie along) is refused before any frame; the same script on the gateway's own
    origin gets through the handshake."""
    page = await pages.new()
    await page.goto(await web.sign_in_link())  # the cookie is in this browser now
    assert COOKIE in [c["name"] for c in await page.context.cookies()]
    other_origin = f"{llm.url}/"  # a real local server on another port: a different origin
    await page.route(other_origin, lambda route: route.fulfill(content_type="text/html",
                                                               body="<p>another app</p>"))  # fmt: skip
    await page.goto(other_origin)
    assert await page.evaluate(OPEN_SOCKET, web.gateway.url) == "refused"
    await page.goto(f"{web.http_url}/health")  # the gateway's own origin
    assert await page.evaluate(OPEN_SOCKET, web.gateway.url) == "open"


async def test_a_raw_handshake_with_a_foreign_origin_gets_403_even_with_the_cookie(
    pages: Pages, web: WebGateway
) -> None:
    """A handshake that carries a live sign-in cookie but a foreign Origin is refused 403."""
    page = await pages.new()
    await page.goto(await web.sign_in_link())
    cookie = next(c for c in await page.context.cookies() if c["name"] == COOKIE)
    headers = {"Cookie": f"{COOKIE}={cookie['value']}"}
    with pytest.raises(InvalidStatus) as refused:
        async with connect(web.gateway.url, origin=Origin("http://evil.example"),
                           additional_headers=headers, proxy=None):  # fmt: skip
            pass
    assert refused.value.response.status_code == 403
