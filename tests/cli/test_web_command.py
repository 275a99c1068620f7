"""`gsv web`: a one-time link that signs a browser in, opened, printed or drawn as a QR
code; `gsv web list` and `revoke` for the browsers signed in. Against a real gateway."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from gsv_cli.main import app
from gsv_cli.state import http_base
from gsv_core.gateway.auth import WEB_SESSION_MS
from gsv_core.gateway.server import RunningGateway
from tests.threaded import owner_env


def gsv(url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--url", url, *args])
    return result.exit_code, result.stdout, result.stderr


def visit(link: str) -> tuple[int, str]:
    """GET a sign-in link without following its redirect: (status, Set-Cookie)."""
    parts = urlsplit(link)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    connection.request("GET", f"{parts.path}?{parts.query}")
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status, response.getheader("Set-Cookie") or ""


def test_print_gives_a_link_that_signs_in_once(live: RunningGateway) -> None:
    code, out, err = gsv(live.url, "web", "--print")
    assert code == 0, err
    link = out.strip()
    assert link.startswith(f"http://127.0.0.1:{live.port}/auth?code=")
    assert "two minutes" in err
    status, cookie = visit(link)
    assert status == 303 and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert visit(link)[0] == 401


def test_json_names_the_link_and_its_expiry(live: RunningGateway) -> None:
    code, out, _ = gsv(live.url, "web", "--json")
    data = json.loads(out)
    assert code == 0 and set(data) == {"url", "expiresAt"}
    assert visit(data["url"])[0] == 303


def test_it_opens_the_users_browser(live: RunningGateway, tmp_path: Path) -> None:
    """`$BROWSER` is the browser, as for every program that opens one."""
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "web"],
        env={**owner_env(live), "BROWSER": str(browser)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "opened the web chat" in done.stdout and "code=" not in done.stdout
    assert visit(opened.read_text())[0] == 303


def test_qr_draws_the_link_and_warns_that_loopback_is_this_machine_only(
    live: RunningGateway,
) -> None:
    code, out, err = gsv(live.url, "web", "--qr")
    assert code == 0
    lines = out.rstrip("\n").split("\n")
    assert len(lines) >= 15 and len({len(line) for line in lines}) == 1  # a square of blocks
    assert set("".join(lines)) <= set("█▀▄ ")
    assert "only this machine reaches" in err and "--url" in err


def test_browsers_are_listed_and_signed_out(live: RunningGateway) -> None:
    assert (
        "no browser is signed in"
        in gsv(live.url, "web", "list")[2] + gsv(live.url, "web", "list")[1]
    )
    _, out, _ = gsv(live.url, "web", "--print")
    assert visit(out.strip())[0] == 303
    code, listed, _ = gsv(live.url, "web", "list", "--json")
    (browser,) = json.loads(listed)["credentials"]
    assert code == 0 and browser["role"] == "web"
    assert browser["expiresAt"] == browser["createdAt"] + WEB_SESSION_MS
    _, table, _ = gsv(live.url, "web", "list")
    assert browser["id"] in table and "until" in table
    code, revoked, _ = gsv(live.url, "web", "revoke", browser["id"])
    assert code == 0 and browser["id"] in revoked
    assert json.loads(gsv(live.url, "web", "list", "--json")[1])["count"] == 0


def test_a_browser_whose_sign_in_ended_is_listed_as_expired(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Past its 30 days a browser is refused; the list says so instead of a date."""
    from gsv_cli.credentials import print_credentials

    now = int(time.time() * 1000)
    old = {"id": "w-old", "subject": "laptop", "createdAt": now - WEB_SESSION_MS - 5,
           "expiresAt": now - 5}  # fmt: skip
    new = {"id": "w-new", "subject": "phone", "createdAt": now, "expiresAt": now + WEB_SESSION_MS}
    print_credentials([old, new], "browser")
    lines = capsys.readouterr().out.splitlines()
    assert "until" in lines[0]
    (laptop,) = [line for line in lines if "w-old" in line]
    (phone,) = [line for line in lines if "w-new" in line]
    assert laptop.rstrip().endswith("expired") and "expired" not in phone


def test_revoke_all_signs_every_browser_out(live: RunningGateway) -> None:
    """`gsv web revoke --all`: every browser signed out, each named; then nothing left."""
    for _ in range(2):
        assert visit(gsv(live.url, "web", "--print")[1].strip())[0] == 303
    ids = [c["id"] for c in json.loads(gsv(live.url, "web", "list", "--json")[1])["credentials"]]
    code, out, err = gsv(live.url, "web", "revoke", "--all")
    assert code == 0, err
    assert all(f"revoked web credential {ident}" in out for ident in ids) and len(ids) == 2
    assert json.loads(gsv(live.url, "web", "list", "--json")[1])["count"] == 0
    code, out, _ = gsv(live.url, "web", "revoke", "--all")
    assert code == 0 and "nothing to revoke" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [((), "or give --all"), (("w0000", "--all"), "not both")],
    ids=["neither", "both"],
)
def test_revoke_names_one_browser_or_all(
    live: RunningGateway, args: tuple[str, ...], says: str
) -> None:
    code, _, err = gsv(live.url, "web", "revoke", *args)
    assert code == 2 and says in err


def test_an_unknown_browser_is_a_clear_error(live: RunningGateway) -> None:
    code, out, err = gsv(live.url, "web", "revoke", "w000000")
    assert code != 0 and "no active credential" in out + err


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("ws://127.0.0.1:8787/ws", "http://127.0.0.1:8787"),
        ("wss://box.tail1234.ts.net/ws", "https://box.tail1234.ts.net"),
        ("ws://[::1]:9000/ws", "http://[::1]:9000"),
        ("wss://example.net/gsv/ws", "https://example.net/gsv"),  # behind a proxy's path
    ],
)
def test_the_link_is_on_the_address_the_cli_uses(url: str, base: str) -> None:
    assert http_base(url) == base
