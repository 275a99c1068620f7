"""The web chat's weight and first paint: the bundle's size (raw and gzipped, every file
under gsv_core/web/static/), then first paint, first contentful paint and time to
connected of the page in headless chromium against a real gateway, beside a blank static
page served by `http.server` in the same run (the baseline: what any page costs here).

    python -m bench.web_paint [-n 9]

The gateway runs in its own process (a throwaway GSV_HOME and database); the browser is
Debian's `chromium` driven by Playwright (no browser download). Each run is a fresh
browser context (an empty cache) holding the sign-in cookie; medians are printed, and the
chat page's first contentful paint over the blank page's. Target (issue 27): the bundle
under 300 kB gzipped.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import shutil
import statistics
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._servers import gateway_process

STATIC = Path(__file__).resolve().parent.parent / "gsv_core" / "web" / "static"
BLANK_PAGE = (
    "<!doctype html><html><head><title>blank</title></head><body><p>blank</p></body></html>"
)
CONNECTED = '[data-testid="connection-status"][data-state="connected"]'
TIMEOUT_MS = 30_000
ROWS = (("first-paint", "first paint"), ("first-contentful-paint", "first contentful paint"),
        ("ready", "connected (chat) / shown"))  # fmt: skip
# when `selector` first matches, timed inside the page (not when the test process hears)
MARK_READY = """selector => new MutationObserver((_, observer) => {
    if (document.querySelector(selector)) {
        window.__ready = performance.now();
        observer.disconnect();
    }
}).observe(document, {subtree: true, childList: true, attributes: true})"""
# paint entries, read once the page has painted (both exist by the time text is shown)
PAINTS = """() => Object.fromEntries(
    performance.getEntriesByType('paint').map(entry => [entry.name, entry.startTime]))"""


def bundle_size(root: Path = STATIC) -> tuple[int, int, int]:
    """(files, raw bytes, gzipped bytes): each file gzipped on its own, as a server would."""
    files = [path for path in sorted(root.rglob("*")) if path.is_file()]
    raw = sum(path.stat().st_size for path in files)
    packed = sum(len(gzip.compress(path.read_bytes(), compresslevel=9)) for path in files)
    return len(files), raw, packed


@contextmanager
def blank_server(directory: Path) -> Iterator[str]:
    """The baseline: one static page from the standard library's HTTP server."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "index.html").write_text(BLANK_PAGE)
    handler = partial(_QuietHandler, directory=str(directory))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def http_root(ws_url: str) -> str:
    """ws://host:port/ws -> http://host:port/"""
    return ws_url.replace("ws", "http", 1).removesuffix("ws")


async def sign_in_link(url: str, token: str) -> str:
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        link = await client.call("web.link", {})
    path: str = link["path"]
    return http_root(url) + path.lstrip("/")


def load(browser: Any, url: str, state: Any, wait_for: str) -> dict[str, float]:
    """One cold load of `url` in a fresh context: paint times (ms after navigation start)
    and, for the chat, when `wait_for` first matched."""
    context = browser.new_context(storage_state=state)
    try:
        page = context.new_page()
        page.add_init_script(f"({MARK_READY})({json.dumps(wait_for)})")
        page.goto(url, timeout=TIMEOUT_MS)
        page.wait_for_selector(wait_for, timeout=TIMEOUT_MS)
        ready = page.evaluate("window.__ready")
        paints = page.evaluate(PAINTS)
        return {
            "first-paint": paints.get("first-paint", float("nan")),
            "first-contentful-paint": paints.get("first-contentful-paint", float("nan")),
            "ready": ready,
        }
    finally:
        context.close()


def medians(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def measure(chromium: str, count: int, tmp: Path) -> tuple[dict[str, float], dict[str, float]]:
    from playwright.sync_api import sync_playwright

    with gateway_process(str(tmp / "gw")) as (url, token), blank_server(tmp / "blank") as blank:
        link = asyncio.run(sign_in_link(url, token))  # before Playwright's own loop runs
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium)
            try:
                return cold_loads(browser, link, http_root(url), blank, count)
            finally:
                browser.close()


def cold_loads(
    browser: Any, link: str, chat_url: str, blank_url: str, count: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Medians of `count` cold loads of each page, after one warm-up load of each."""
    signed_in = browser.new_context()
    signed_in.new_page().goto(link, timeout=TIMEOUT_MS)
    state = signed_in.storage_state()  # the HttpOnly cookie, for every cold run
    signed_in.close()
    chat, blank = [], []
    for _ in range(count + 1):
        chat.append(load(browser, chat_url, state, CONNECTED))
        blank.append(load(browser, blank_url, None, "p"))
    return medians(chat[1:]), medians(blank[1:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=9)
    count = max(3, min(parser.parse_args(argv).count, 50))
    chromium = shutil.which("chromium")
    if not STATIC.is_dir() or chromium is None:
        raise SystemExit(f"needs {STATIC} and Debian's chromium on PATH")
    files, raw, packed = bundle_size()
    print(f"bundle: {files} files, {raw / 1024:.1f} KiB raw, {packed / 1024:.1f} KiB gzipped "
          f"(target < 300 kB gzipped)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="gsv-web-paint-") as tmp:
        (Path(tmp) / "gw").mkdir()
        chat, blank = measure(chromium, count, Path(tmp))
    print(f"{count} cold loads each, headless chromium, 127.0.0.1, medians in ms")
    print(f"{'':<24}{'chat page':>12}{'blank page':>12}")
    for key, name in ROWS:
        print(f"{name:<24}{chat[key]:>12.1f}{blank[key]:>12.1f}")
    ratio = chat["first-contentful-paint"] / blank["first-contentful-paint"]
    print(f"first contentful paint: chat / blank = {ratio:.2f}")
    figures = {"bundle_gzip_bytes": packed, "bundle_raw_bytes": raw,
               "fcp_ms": round(chat["first-contentful-paint"], 1),
               "connected_ms": round(chat["ready"], 1), "fcp_ratio": round(ratio, 2)}  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
