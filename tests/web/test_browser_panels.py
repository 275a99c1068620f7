"""Around the chat: slash-command completion, a file uploaded into the workspace, an image
attached to a message, the nodes, cron and usage panels, the config view with its secrets
masked, and the dark and light themes."""

from __future__ import annotations

import asyncio
import os
import re
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

from playwright.async_api import Page
from playwright.async_api import expect

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.web.conftest import BROWSER_LOOP
from tests.web.conftest import DESKTOP
from tests.web.conftest import MODEL_ID
from tests.web.conftest import Pages
from tests.web.conftest import WebGateway
from tests.web.conftest import eventually
from tests.web.conftest import messages
from tests.web.conftest import send
from tests.web.conftest import sign_in

pytestmark = BROWSER_LOOP

# what a theme changes that a person sees
COLOURS = """() => [document.body, document.querySelector('[data-testid="app"]')]
    .map(el => getComputedStyle(el)).map(s => [s.backgroundColor, s.color]).join()"""


def tiny_png() -> bytes:
    """A valid 1x1 PNG (the gateway checks that an image's bytes are the type named)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # one row: filter byte, one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def image_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The image parts of the last user message of an OpenAI chat-completions request."""
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    content = user["content"] if isinstance(user["content"], list) else []
    return [part for part in content if part.get("type") == "image_url"]


async def test_slash_completion_offers_commands_and_fills_the_composer(page: Page) -> None:
    """Typing `/` opens the command menu; more letters narrow it; choosing one puts it in
    the composer."""
    composer = page.get_by_test_id("composer")
    await composer.fill("/")
    menu = page.get_by_test_id("slash-menu")
    await expect(menu).to_be_visible()
    await expect(menu.locator('[data-testid="slash-item"][data-command="/reset"]')).to_be_visible()
    await composer.fill("/res")
    items = menu.get_by_test_id("slash-item")
    await expect(items.first).to_be_visible()
    for command in await items.evaluate_all("els => els.map(e => e.dataset.command)"):
        assert command.startswith("/res"), f"{command} does not match /res"
    await menu.locator('[data-testid="slash-item"][data-command="/reset"]').click()
    await expect(composer).to_have_value(re.compile(r"^/reset\b"))


async def test_a_text_file_uploads_into_the_workspace(page: Page, web: WebGateway) -> None:
    """A file chosen in the file input is written under uploads/ in the agent's workspace
    and the page says where."""
    await page.get_by_test_id("file-input").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"from the browser\n"}]
    )
    await expect(page.get_by_test_id("transcript")).to_contain_text("uploads/notes.txt")
    read = await web.call("workspace.read", {"path": "uploads/notes.txt"})
    assert "from the browser" in str(read)


async def test_an_attached_image_goes_to_the_model_with_the_message(
    page: Page, llm: FakeLLMServer
) -> None:
    """An image chosen in the image input shows as a chip and is sent with the next
    message: the model's request carries it as an image part."""
    await page.get_by_test_id("image-input").set_input_files(
        files=[{"name": "dot.png", "mimeType": "image/png", "buffer": tiny_png()}]
    )
    await expect(page.get_by_test_id("attachments")).to_contain_text("dot.png")
    llm.enqueue(reply("A red dot."))
    await send(page, "what is in this image?")
    await expect(messages(page, "assistant").last).to_contain_text("A red dot.")
    parts = image_parts(llm.requests[-1].body)
    assert len(parts) == 1
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_the_nodes_panel_shows_a_connected_node_and_its_tools(
    page: Page, web: WebGateway, tmp_path: Path
) -> None:
    """A real node (`gsv node run` in a child process) shows online with its tools."""
    workspace = tmp_path / "node-workspace"
    workspace.mkdir()
    node = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gsv_cli", "--url", web.gateway.url, "node", "run", "--id", "laptop",
        "--workspace", str(workspace), "--no-log-stderr",
        stdout=asyncio.subprocess.DEVNULL, env={**os.environ, "GSV_TOKEN": web.gateway.token},
    )  # fmt: skip
    try:
        online = web.gateway.gateway.nodes.online_ids
        await eventually(lambda: "laptop" in online(), "the node to connect")
        await page.get_by_test_id("tab-nodes").click()
        item = page.locator('[data-testid="node-item"][data-node-id="laptop"]')
        await expect(item).to_have_attribute("data-online", "true")
        await expect(item).to_contain_text("Read")
    finally:
        node.terminate()
        await asyncio.wait_for(node.wait(), 30)


async def test_the_cron_panel_lists_a_job(page: Page, web: WebGateway) -> None:
    """A job added by another client shows in the cron panel under its id."""
    added = await web.call(
        "cron.add",
        {"name": "morning report", "schedule": {"kind": "every", "everyMs": 3_600_000},
         "spec": {"mode": "task", "message": "write the report"}},
    )  # fmt: skip
    job_id = added["job"]["id"]
    await page.get_by_test_id("tab-cron").click()
    item = page.locator(f'[data-testid="cron-item"][data-job-id="{job_id}"]')
    await expect(item).to_contain_text("morning report")


async def test_the_usage_panel_draws_a_chart_after_a_reply(page: Page, llm: FakeLLMServer) -> None:
    """After a reply (the model reports its tokens) the usage panel draws its chart and
    says today's spend."""
    llm.enqueue(reply("Counted.", usage=(1200, 300)))
    await send(page, "count me")
    await expect(messages(page, "assistant").last).to_contain_text("Counted.")
    await page.get_by_test_id("tab-usage").click()
    chart = page.get_by_test_id("usage-chart")
    await expect(chart).to_be_visible()
    assert await chart.evaluate("el => el.tagName.toLowerCase()") == "svg"
    await expect(chart.locator("rect").first).to_be_attached()  # at least one bar
    await expect(page.get_by_test_id("spend-today")).not_to_be_empty()


async def test_the_config_view_masks_secrets(page: Page, web: WebGateway) -> None:
    """The config view shows the settings (the model) but never the owner token."""
    await page.get_by_test_id("tab-config").click()
    view = page.get_by_test_id("config-view")
    await expect(view).to_contain_text(MODEL_ID)
    assert web.gateway.token not in await view.inner_text()
    assert web.gateway.token not in await page.content()


async def test_the_theme_follows_the_system_until_toggled_and_is_remembered(
    pages: Pages, web: WebGateway
) -> None:
    """A browser that prefers dark gets the dark theme; the toggle switches to light (the
    colours change) and the choice survives a reload."""
    page = await pages.new(viewport=DESKTOP, color_scheme="dark")
    await sign_in(page, web)
    root = page.locator("html")
    await expect(root).to_have_attribute("data-theme", "dark")
    dark = await page.evaluate(COLOURS)
    await page.get_by_test_id("theme-toggle").click()
    await expect(root).to_have_attribute("data-theme", "light")
    # waited for, not read once: a colour transition would still show dark at first
    await page.wait_for_function(f"dark => ({COLOURS})() !== dark", arg=dark, timeout=15_000)
    await page.reload()
    await expect(root).to_have_attribute("data-theme", "light")
