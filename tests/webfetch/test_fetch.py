"""gsv__WebFetch against a local HTTP server on 127.0.0.1 (allowed through
webFetch.allowPrivate, as a user's own LAN service would be): HTML as Markdown or text,
JSON pretty-printed, the size cap, the deadline, binary refused, redirects re-checked
(to a refused address, in a loop), forbidden headers; and the tool through a real
gateway with the scripted model."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from urllib.parse import urlsplit

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import InvalidParams
from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.webfetch.convert import as_text
from gsv_core.webfetch.fetch import Request
from gsv_core.webfetch.fetch import fetch
from gsv_core.webfetch.guard import parse_networks
from gsv_core.webfetch.guard import system_resolver
from tests.agent.conftest import EventLog
from tests.agent.conftest import send
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.fakes.quiet_http import QuietHTTPServer

PAGE = (
    "<html><head><title>T</title><style>p{}</style><script>steal()</script></head>"
    "<body><h1>Notes</h1><p>The <b>answer</b> is 42.</p><ul><li>one</li></ul></body></html>"
)
LOCAL = parse_networks(["127.0.0.1/32"])


class Site(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
        if path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE.encode())
        elif path == "/json":
            self._send(200, "application/json", b'{"b":1,"a":[1,2]}')
        elif path == "/big":
            self._send(200, "text/plain", b"x" * 300_000)
        elif path == "/slow":
            time.sleep(3)
            self._send(200, "text/plain", b"late")
        elif path == "/png":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
        elif path == "/redirect":
            self._redirect(query["to"][0])
        elif path == "/loop":
            self._redirect("/loop")
        elif path == "/echo":
            body = json.dumps({"method": "GET", "ua": self.headers.get("user-agent"),
                               "host": self.headers.get("host"), "x": self.headers.get("x-test"),
                               "auth": self.headers.get("authorization"),
                               "cookie": self.headers.get("cookie")})  # fmt: skip
            self._send(200, "application/json", body.encode())
        else:
            self._send(404, "text/plain", b"no such page")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        data = self.rfile.read(length).decode()
        if self.path == "/see-other":
            self._redirect("/echo", 303)
            return
        self._send(200, "application/json", json.dumps({"method": "POST", "body": data}).encode())

    def _redirect(self, to: str, status: int = 302) -> None:
        self.send_response(status)
        self.send_header("location", to)
        self.send_header("content-length", "0")
        self.end_headers()

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)  # the deadline test's client may be gone


@pytest.fixture
def site() -> Iterator[str]:
    yield from serve_site()


@pytest.fixture
def other_site() -> Iterator[str]:
    yield from serve_site()


def serve_site(handler: type[BaseHTTPRequestHandler] = Site) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 port 0 answering with `handler`; its base URL."""
    server = QuietHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


async def get(url: str, max_bytes: int = 1_000_000, timeout: float = 10, **kw: Any) -> Any:
    return await fetch(Request(url, **kw), system_resolver, LOCAL, max_bytes, timeout)


async def test_html_becomes_markdown_without_scripts(site: str) -> None:
    fetched = await get(f"{site}/page")
    assert (fetched.status, fetched.content_type, fetched.truncated) == (200, "text/html", False)
    text = as_text(fetched, "markdown")
    assert text == "# Notes\n\nThe **answer** is 42.\n\n- one\n"
    assert "steal" not in as_text(fetched, "text") and "The\nanswer\nis 42." in as_text(
        fetched, "text"
    )
    assert "<script>" in as_text(fetched, "raw")


async def test_json_is_pretty_printed(site: str) -> None:
    assert (
        as_text(await get(f"{site}/json"), "markdown")
        == '{\n  "b": 1,\n  "a": [\n    1,\n    2\n  ]\n}\n'
    )


async def test_the_body_is_cut_at_max_bytes(site: str) -> None:
    fetched = await get(f"{site}/big", max_bytes=1000)
    assert (len(fetched.body), fetched.truncated) == (1000, True)


async def test_a_slow_server_times_out(site: str) -> None:
    with pytest.raises(TimedOut, match="did not answer within 1s"):
        await get(f"{site}/slow", timeout=1)


async def test_binary_is_not_returned(site: str) -> None:
    with pytest.raises(ToolFailed, match="image/png"):
        as_text(await get(f"{site}/png"), "markdown")


async def test_a_redirect_to_a_refused_address_is_refused(site: str) -> None:
    for target in ("http://169.254.169.254/latest/", "http://[::1]/", "http://10.0.0.1/"):
        with pytest.raises(ToolFailed, match="not fetched"):
            await get(f"{site}/redirect?to={target}")
    fetched = await get(f"{site}/redirect?to=/page")  # a relative one on the same site
    assert fetched.url == f"{site}/page" and fetched.status == 200


async def test_a_redirect_loop_stops(site: str) -> None:
    with pytest.raises(ToolFailed, match="more than 5 redirects"):
        await get(f"{site}/loop")


async def test_headers_post_and_303(site: str) -> None:
    echoed = json.loads((await get(f"{site}/echo", headers={"X-Test": "1"})).body)
    assert echoed["x"] == "1" and echoed["ua"].startswith("gsv-webfetch")
    assert echoed["host"] == site.removeprefix("http://")
    posted = json.loads((await get(f"{site}/post", method="POST", body="hi")).body)
    assert posted == {"method": "POST", "body": "hi"}
    other = json.loads((await get(f"{site}/see-other", method="POST", body="x")).body)
    assert other["method"] == "GET"  # 303: the follow-up is a GET
    with pytest.raises(ToolFailed, match="'Host' cannot be set"):
        await get(f"{site}/echo", headers={"Host": "evil.test"})


async def test_an_address_that_refuses_the_connection_gives_way_to_the_next(site: str) -> None:
    """A name with two addresses, the first with nobody listening (the site is on
    127.0.0.1 only): the fetch connects to the second, as a browser does; when none
    accepts, it fails saying so."""
    port = urlsplit(site).port

    async def dual(host: str, _: int) -> list[str]:
        return ["::1", "127.0.0.1"] if host == "dual.test" else ["::1"]

    both = parse_networks(["::1/128", "127.0.0.1/32"])
    got = await fetch(Request(f"http://dual.test:{port}/page"), dual, both, 1_000_000, 10)
    assert got.status == 200 and b"answer" in got.body
    with pytest.raises(ToolFailed, match="ConnectError"):
        await fetch(Request(f"http://only6.test:{port}/page"), dual, both, 1_000_000, 10)


async def test_the_refusal_needs_no_allow_list_entry_to_bite(site: str) -> None:
    """Without webFetch.allowPrivate the same local site is refused."""
    with pytest.raises(ToolFailed, match="loopback"):
        await fetch(Request(f"{site}/page"), system_resolver, [], 1000, 5)


async def test_the_agent_reads_a_local_page_as_markdown(
    client: GatewayClient, fake: FakeProvider, log: EventLog, site: str
) -> None:
    await client.call("config.set", {"path": "webFetch.allowPrivate", "value": ["127.0.0.1"]})
    fake.enqueue(call("gsv__WebFetch", {"url": f"{site}/page"}))
    fake.enqueue("The page says 42.")
    run = (await send(client, "read my notes page"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    payload = json.loads(result["content"][0]["text"])
    assert payload["content"] == "# Notes\n\nThe **answer** is 42.\n\n- one\n"
    assert (payload["status"], payload["truncated"]) == (200, False)


@pytest.mark.parametrize("value", [["not-a-net"], "127.0.0.1", [5]])
async def test_bad_allow_private_config_is_refused(client: GatewayClient, value: object) -> None:
    with pytest.raises(InvalidParams, match="allowPrivate"):
        await client.call("config.set", {"path": "webFetch.allowPrivate", "value": value})


async def fetch_as_agent(
    client: GatewayClient, fake: FakeProvider, log: EventLog, args: dict[str, Any]
) -> dict[str, Any]:
    """One turn whose model calls gsv__WebFetch with `args`; the result the model got."""
    await client.call("config.set", {"path": "webFetch.allowPrivate", "value": ["127.0.0.1"]})
    fake.enqueue(call("gsv__WebFetch", args))
    fake.enqueue("Done.")
    run = (await send(client, "fetch it"))["runId"]
    assert (await log.ended(run))["state"] == "final"
    result: dict[str, Any] = next(
        m for m in fake.requests[-1].messages if m["role"] == "toolResult"
    )
    return result


async def test_save_to_puts_a_binary_file_in_the_workspace(
    client: GatewayClient, fake: FakeProvider, log: EventLog, site: str, tmp_path: Path
) -> None:
    result = await fetch_as_agent(client, fake, log, {"url": f"{site}/png",
                                                      "saveTo": "downloads/pic.png"})  # fmt: skip
    saved = json.loads(result["content"][0]["text"])
    assert saved["savedTo"] == "agents/main/downloads/pic.png" and saved["bytes"] == 108
    on_disk = tmp_path / "data" / "workspace" / saved["savedTo"]
    assert on_disk.read_bytes() == b"\x89PNG\r\n\x1a\n" + b"\0" * 100


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"saveTo": "../../outside.png"}, "path traversal"),
     ({"saveTo": "big.txt", "maxBytes": 10}, "larger than maxBytes")],
)  # fmt: skip
async def test_save_to_refuses_escapes_and_cut_files(
    client: GatewayClient, fake: FakeProvider, log: EventLog, site: str,
    extra: dict[str, Any], message: str,
) -> None:  # fmt: skip
    result = await fetch_as_agent(client, fake, log, {"url": f"{site}/big", **extra})
    assert result["isError"] is True and message in result["content"][0]["text"]


async def test_credentials_never_follow_a_redirect_to_another_origin(
    site: str, other_site: str
) -> None:
    """An Authorization or Cookie header meant for one site stays with it: a redirect to
    another origin (here another port) gets neither, as browsers and httpx do; a redirect
    on the same origin keeps them."""
    secret = {"authorization": "Bearer s3cret", "cookie": "sid=1", "x-test": "kept"}
    away = await get(f"{site}/redirect?to={other_site}/echo", headers=secret)
    assert json.loads(away.body) | {"ua": None, "host": None} == {
        "method": "GET", "ua": None, "host": None, "x": "kept", "auth": None, "cookie": None
    }  # fmt: skip
    home = json.loads((await get(f"{site}/redirect?to=/echo", headers=secret)).body)
    assert (home["auth"], home["cookie"]) == ("Bearer s3cret", "sid=1")
