"""The page reached under a host name the gateway does not trust (a LAN or tailnet name
that is not in `gateway.allowedOrigins`): its socket is refused (the DNS-rebinding rule),
and instead of "offline" for ever the page says why and the command that fixes it. Once
the owner runs it, the page connects by itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from playwright.async_api import Browser
from playwright.async_api import async_playwright
from playwright.async_api import expect

from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import WebGateway

pytestmark = BROWSER_LOOP
NAME = "gsv.test"  # resolved to 127.0.0.1 by this browser only


@pytest_asyncio.fixture(loop_scope="session")
async def named_browser(chromium_path: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path, args=[f"--host-resolver-rules=MAP {NAME} 127.0.0.1"]
        )
        try:
            yield browser
        finally:
            await browser.close()


async def test_a_refused_origin_is_explained_and_fixable(
    named_browser: Browser, web: WebGateway
) -> None:
    link = (await web.sign_in_link()).replace("127.0.0.1", NAME)
    origin = f"http://{NAME}:{web.gateway.port}"
    context = await named_browser.new_context()
    try:
        page = await context.new_page()
        await page.goto(link)
        banner = page.locator("#banner")
        await expect(banner).to_contain_text(f"refuses connections from pages at {origin}")
        await expect(banner).to_contain_text(
            f"gsv config set gateway.allowedOrigins '[\"{origin}\"]'"
        )
        status = page.get_by_test_id("connection-status")
        await expect(status).to_have_attribute("data-state", "offline")
        await web.call("config.set", {"path": "gateway.allowedOrigins", "value": [origin]})
        await expect(status).to_have_attribute("data-state", "connected", timeout=30_000)
        await expect(banner).to_be_hidden()
    finally:
        await context.close()
