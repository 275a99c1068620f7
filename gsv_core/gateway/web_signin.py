"""Signing a browser in (docs/web.md): `GET /auth?code=CODE` exchanges a one-time code from
`web.link` for a web credential, sent back as a cookie, and redirects to `/`.

The cookie is HttpOnly (page scripts never see it), SameSite=Strict (no other site's page
sends it) and, when the gateway speaks TLS, named `__Host-gsv_web`: the browser then
keeps it Secure, for this host and path `/` only, and no plain-http page or other host
can set or shadow it. Over plain http it is `gsv_web`. A browser signed in under TLS
before the prefix keeps its `gsv_web` cookie until it expires (30 days at most); its
next sign-in replaces it. It holds the credential token itself, which the store keeps
hashed, so a copy of the database signs nobody in. Browsers send a cookie to every port
of a host, so the cookie alone admits nobody: only a WebSocket upgrade with an allowed
Origin reads it (`WebFront.browser_credential`).

A sign-in request another site's page made (the browser says `Sec-Fetch-Site:
cross-site` or `same-site`: an <img> on any page the owner visits can make one) is
refused without trying its code: it uses up nothing, neither the code nor the address's
allowance of wrong codes, so no page can lock the owner out of signing in.
"""

from __future__ import annotations

import re
import secrets
from http.cookies import CookieError
from http.cookies import SimpleCookie
from urllib.parse import parse_qs
from urllib.parse import urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Request
from websockets.http11 import Response

from gsv_core.errors import RateLimited
from gsv_core.errors import Unauthorized
from gsv_core.gateway.auth import WEB_SESSION_MS
from gsv_core.gateway.auth import Authenticator
from gsv_core.gateway.web_assets import WebAssets
from gsv_core.gateway.web_assets import security_headers

COOKIE = "gsv_web"  # plain http (and a TLS browser signed in before the prefix)
SECURE_COOKIE = "__Host-gsv_web"  # under TLS
# first match wins: Edge's agent also says Chrome, and Chrome's also says Safari
_BROWSERS = (("Edg/", "Edge"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"),
             ("Safari/", "Safari"))  # fmt: skip
_SYSTEMS = (("Android", "Android"), ("iPhone", "iPhone"), ("iPad", "iPad"),
            ("Mac OS", "macOS"), ("Windows", "Windows"), ("Linux", "Linux"))  # fmt: skip
_TOKEN = re.compile(r"^[A-Za-z0-9_.-]{1,256}$")
# how a browser says another site's page made the request (Fetch Metadata); a link opened
# from the terminal, a QR code or the address bar says `none`, older browsers nothing
OTHER_SITES = ("cross-site", "same-site")
FROM_ANOTHER_SITE = (
    "This sign-in link was opened from another web page, so it was not used. "
    "Paste it into the address bar, or run `gsv web` again."
)


def browser_credential(headers: Headers, secure: bool) -> str | None:
    """The web credential in a request's sign-in cookie, or None (none, or malformed).
    Under TLS the `__Host-` cookie counts first, then one set before it existed."""
    raw = headers.get("Cookie")
    if not raw:
        return None
    try:
        cookie = SimpleCookie(raw)
    except CookieError:
        return None
    for name in (SECURE_COOKIE, COOKIE) if secure else (COOKIE,):
        morsel = cookie.get(name)
        if morsel is not None and _TOKEN.match(morsel.value):
            return morsel.value
    return None


def describe_browser(user_agent: str) -> str:
    """`Firefox on Linux (3fa2)`: how `gsv web list` names a signed-in browser; the
    suffix keeps two browsers of one kind apart."""
    name = next((label for mark, label in _BROWSERS if mark in user_agent), "browser")
    system = next((label for mark, label in _SYSTEMS if mark in user_agent), "")
    return f"{name}{' on ' + system if system else ''} ({secrets.token_hex(2)})"


def session_cookies(token: str, secure: bool) -> list[str]:
    """The Set-Cookie values of a sign-in: the credential's cookie; under TLS also the
    end of a `gsv_web` cookie from before the `__Host-` prefix."""
    flags = ["Path=/", "HttpOnly", "SameSite=Strict"] + (["Secure"] if secure else [])
    name = SECURE_COOKIE if secure else COOKIE
    cookies = ["; ".join([f"{name}={token}", *flags, f"Max-Age={WEB_SESSION_MS // 1000}"])]
    if secure:
        cookies.append("; ".join([f"{COOKIE}=", *flags, "Max-Age=0"]))
    return cookies


async def sign_in(
    request: Request, source: str, auth: Authenticator, pages: WebAssets, secure: bool
) -> Response:
    """The answer to `GET /auth?code=...` from the address `source`: a cookie and a
    redirect, or a plain page saying why not (401 wrong/used/expired, 403 made by another
    site's page, 429 too many wrong codes from this address)."""
    if request.headers.get("Sec-Fetch-Site", "").lower() in OTHER_SITES:
        return pages.error(403, FROM_ANOTHER_SITE)
    codes = parse_qs(urlsplit(request.path).query).get("code") or [""]
    user_agent = request.headers.get("User-Agent", "")
    try:
        redeemed = await auth.sign_in(codes[0][:64], describe_browser(user_agent), source)
    except (Unauthorized, RateLimited) as exc:
        status = 429 if isinstance(exc, RateLimited) else 401
        return pages.error(status, str(exc.message))
    headers = security_headers()
    headers["Location"] = "/"
    for cookie in session_cookies(redeemed.token, secure):
        headers["Set-Cookie"] = cookie  # websockets' Headers adds one header per value
    headers["Cache-Control"] = "no-store"
    headers["Content-Length"] = "0"
    return Response(303, "See Other", headers, b"")
