"""Signing browsers out (docs/web.md): `gsv web revoke --all` reaches tabs that are open
right now, in a real chromium."""

from __future__ import annotations

from playwright.async_api import expect

from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway
from tests.web.conftest import sign_in

pytestmark = BROWSER_LOOP


async def test_revoking_every_browser_signs_every_open_tab_out(
    pages: Pages, web: WebGateway
) -> None:
    """Two browsers signed in and connected; `auth.revoke {all, role: web}` closes both
    sockets and each tab shows the signed-out screen, not a chat that looks alive."""
    tabs = [await pages.new(), await pages.new()]  # two contexts: two browsers
    for tab in tabs:
        await sign_in(tab, web)
    revoked = await web.call("auth.revoke", {"all": True, "role": "web"})
    assert revoked["disconnected"] == 2
    for tab in tabs:
        await expect(tab.get_by_test_id("signed-out")).to_be_visible()
        await expect(tab.get_by_test_id("connection-status")).not_to_have_attribute(
            "data-state", "connected"
        )
