"""The chat on a phone: at 375 px wide nothing scrolls sideways, the composer fits, the
transcript sits above it and the panels wait behind the menu button. Judged by element
positions, not pixels; the screenshot is kept under tmp_path for a person to look at."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import FloatRect
from playwright.async_api import Locator
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway
from tests.web.conftest import messages
from tests.web.conftest import send
from tests.web.conftest import sign_in

WIDTH, HEIGHT = 375, 812
PHONE = {"viewport": {"width": WIDTH, "height": HEIGHT}, "device_scale_factor": 2,
         "is_mobile": True, "has_touch": True}  # fmt: skip
# a reply that tempts a layout to widen: a long unbroken word and a long line of code
WIDE_REPLY = "A long word: " + "x" * 120 + "\n\n```\n" + "print('" + "wide " * 60 + "')\n```\n"

pytestmark = BROWSER_LOOP


async def box(locator: Locator) -> FloatRect:
    found = await locator.bounding_box()
    assert found is not None, f"{locator} has no box (not rendered)"
    return found


async def test_the_chat_fits_a_375px_phone_screen(
    pages: Pages, web: WebGateway, llm: FakeLLMServer,
    tmp_path: Path,
) -> None:  # fmt: skip
    """Composer inside the width, no horizontal scroll even with a wide reply, transcript
    above the composer, panels hidden until the menu button opens them."""
    page = await pages.new(**PHONE)
    await sign_in(page, web)
    llm.enqueue(reply(WIDE_REPLY))
    await send(page, "something wide please")
    await expect(messages(page, "assistant").last.locator("pre")).to_be_visible()
    await page.screenshot(path=tmp_path / "chat-375.png", full_page=True, animations="disabled")
    assert (tmp_path / "chat-375.png").stat().st_size > 0

    await expect(page.get_by_test_id("composer")).to_be_in_viewport(ratio=1)
    composer = await box(page.get_by_test_id("composer"))
    assert composer["x"] >= 0 and composer["x"] + composer["width"] <= WIDTH
    send_button = await box(page.get_by_test_id("send"))
    assert send_button["x"] >= 0 and send_button["x"] + send_button["width"] <= WIDTH
    scroll_width = await page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll_width <= WIDTH, f"the page scrolls sideways ({scroll_width} px wide)"
    transcript = await box(page.get_by_test_id("transcript"))
    assert transcript["y"] + transcript["height"] <= composer["y"] + 1, "transcript overlaps"

    menu = page.get_by_test_id("menu-button")
    await expect(menu).to_be_in_viewport()
    tab = page.get_by_test_id("tab-sessions")
    for hidden in (tab, *(page.get_by_test_id(p) for p in ("panel-sessions", "panel-config"))):
        await expect(hidden).not_to_be_in_viewport()
    await menu.click()
    await expect(tab).to_be_in_viewport()
    await tab.click()
    await expect(tab).not_to_be_in_viewport()  # choosing a panel puts the menu away
    sessions = page.get_by_test_id("panel-sessions")
    await expect(sessions).to_be_in_viewport()
    opened = await box(sessions)
    assert opened["x"] >= 0 and opened["x"] + opened["width"] <= WIDTH
    await page.screenshot(path=tmp_path / "sessions-375.png", animations="disabled")
