"""The web chat's browser tests: Debian's chromium driven by Playwright (async API, in the
test's event loop), a real gateway on 127.0.0.1 in the same loop (restartable on the same
port and database), real SQLite under tmp_path, and the fake OpenAI-compatible LLM server.

Playwright never downloads a browser here: `chromium.launch(executable_path=...)` uses the
system's `chromium` (.ci/run installs it); without it these tests skip, saying so.
The page is driven through the `data-testid`s of docs/web.md's DOM contract only.

One browser serves the whole run, so the tests and their async fixtures run in the
session's event loop: each test module says `pytestmark = BROWSER_LOOP`.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser
from playwright.async_api import BrowserContext
from playwright.async_api import Locator
from playwright.async_api import Page
from playwright.async_api import async_playwright
from playwright.async_api import expect

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.waiting import WAIT

BROWSER_LOOP = pytest.mark.asyncio(loop_scope="session")
MODEL_ID = "fake-1"
DESKTOP = {"width": 1280, "height": 800}
# auto-waiting assertions: generous, for a CI machine shared with other work
expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)")
    return path


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


class WebGateway:
    """A real gateway in the test's event loop whose model is the fake LLM server; it can
    stop and start again on the same port and database, as a restarted gateway does."""

    def __init__(self, database: Path, llm_base_url: str) -> None:
        self.database = database
        self.llm_base_url = llm_base_url
        self.running: RunningGateway | None = None
        self.owner: GatewayClient | None = None
        self._stack: AsyncExitStack | None = None

    @property
    def gateway(self) -> RunningGateway:
        assert self.running is not None, "the gateway is stopped"
        return self.running

    @property
    def http_url(self) -> str:
        return self.gateway.http_url

    async def start(self, port: int = 0) -> None:
        stack = AsyncExitStack()
        self.running = await stack.enter_async_context(
            serve(ServerConfig(database=self.database), host="127.0.0.1", port=port)
        )
        self.owner = await stack.enter_async_context(
            GatewayClient(self.running.url, token=self.running.token)
        )
        self._stack = stack

    async def stop(self) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._stack = self.running = self.owner = None

    async def call(self, method: str, params: Any = None) -> Any:
        assert self.owner is not None, "the gateway is stopped"
        return await self.owner.call(method, params)

    async def use_fake_model(self, base_url: str | None = None) -> None:
        """The fake LLM server (or a proxy in front of it) as the model, set as a user would."""
        provider = {"api": "openai", "baseUrl": base_url or self.llm_base_url}
        await self.call("config.set", {"path": "providers.fake", "value": provider})
        await self.call(
            "config.set", {"path": "model", "value": {"provider": "fake", "id": MODEL_ID}}
        )

    async def sign_in_link(self) -> str:
        """A fresh one-time sign-in link (`web.link`, as `gsv web --print` asks for)."""
        link = await self.call("web.link", {})
        return f"{self.http_url}{link['path']}"

    async def chat(self, session_key: str, message: str) -> None:
        """Send a message as another client would and wait for its run to end."""
        assert self.owner is not None, "the gateway is stopped"
        sent = await self.call("chat.send", {"sessionKey": session_key, "message": message})
        async with asyncio.timeout(WAIT):
            async for frame in self.owner.events():
                payload = frame.payload or {}
                ours = frame.event == "chat" and payload.get("runId") == sent["runId"]
                if ours and payload.get("state") in ("final", "error"):
                    return
        raise AssertionError("the owner client's events ended before the run did")


@pytest_asyncio.fixture(loop_scope="session")
async def web(tmp_path: Path, llm: FakeLLMServer) -> AsyncIterator[WebGateway]:
    gateway = WebGateway(tmp_path / "gw" / "gsv.db", llm.openai_base_url)
    await gateway.start()
    try:
        await gateway.use_fake_model()
        yield gateway
    finally:
        await gateway.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    """One chromium for the whole run (launching takes a second or two); each test opens
    its own contexts, which share nothing (cookies, storage, cache)."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium_path)
        try:
            yield launched
        finally:
            await launched.close()


class Pages:
    """The browser contexts a test opens (each its own cookies, storage and cache), closed
    after the test. Uncaught exceptions and dialogs (alert, confirm, prompt) of their pages
    are kept: the app must throw none, and an injected script would show itself with a
    dialog."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self._contexts: list[BrowserContext] = []

    async def new(self, **context_options: Any) -> Page:
        context = await self.browser.new_context(**context_options)
        self._contexts.append(context)
        page = await context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("dialog", self._dialog)
        return page

    async def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        await dialog.dismiss()

    async def close(self) -> None:
        for context in self._contexts:
            await context.close()


@pytest_asyncio.fixture(loop_scope="session")
async def pages(browser: Browser) -> AsyncIterator[Pages]:
    opened = Pages(browser)
    try:
        yield opened
    finally:
        await opened.close()
    assert opened.dialogs == [], "a dialog opened"
    assert opened.errors == [], "the page threw"


async def sign_in(page: Page, web: WebGateway) -> None:
    """Open a one-time link and wait until the page is connected and shows its session
    (the transcript is empty until the history, or a new session's notice, arrives)."""
    await page.goto(await web.sign_in_link())
    await expect(page.get_by_test_id("connection-status")).to_have_attribute(
        "data-state", "connected"
    )
    await expect(page.get_by_test_id("transcript")).not_to_be_empty()


@pytest_asyncio.fixture(loop_scope="session")
async def page(pages: Pages, web: WebGateway) -> Page:
    """A desktop-sized page, signed in and connected."""
    opened = await pages.new(viewport=DESKTOP)
    await sign_in(opened, web)
    return opened


async def send(page: Page, text: str) -> None:
    """Type a message in the composer and press the send button."""
    await page.get_by_test_id("composer").fill(text)
    await page.get_by_test_id("send").click()


def messages(page: Page, role: str) -> Locator:
    """The transcript's messages of one role (user, assistant, system, error)."""
    return page.get_by_test_id("transcript").locator(f'[data-testid="message"][data-role="{role}"]')


async def eventually(predicate: Callable[[], object], what: str, seconds: float = 30) -> None:
    """Wait (bounded) until `predicate` holds on the test's side, where the page's own
    auto-waiting cannot look (the gateway's state); fail naming `what` if it never does."""
    try:
        async with asyncio.timeout(seconds):
            while not predicate():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def current_session(page: Page) -> str:
    """The session key the page shows in its header."""
    key = (await page.get_by_test_id("current-session").inner_text()).strip()
    assert key, "the header names no session"
    return key
