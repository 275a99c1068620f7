"""Signing a browser in (docs/web.md): `GET /auth?code=CODE` exchanges a one-time code from
`web.link` for a web credential, sent back as the `gsv_web` cookie, and redirects to `/`.

The cookie is HttpOnly (page scripts never see it), SameSite=Strict (no other site's page
sends it) and Secure when the gateway speaks TLS. It holds the credential token itself,
which the store keeps hashed, so a copy of the database signs nobody in.

A sign-in request another site's page made (the browser says `Sec-Fetch-Site:
cross-site` or `same-site`: an <img> on any page the owner visits can make one) is
refused without trying its code: it uses up nothing, neither the code nor the address's
allowance of wrong codes, so no page can lock the owner out of signing in.
"""

from __future__ import annotations

import re
import secrets
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from gsv_core.errors import RateLimited, Unauthorized
from gsv_core.gateway.auth import WEB_SESSION_MS, Authenticator
from gsv_core.gateway.web_assets import WebAssets, security_headers

COOKIE = "gsv_web"
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


def browser_credential(headers: Headers | None) -> str | None:
    """The web credential in a request's `gsv_web` cookie, or None (none, or malformed)."""
    raw = headers.get("Cookie") if headers is not None else None
    if not raw:
        return None
    try:
        cookie = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = cookie.get(COOKIE)
    return morsel.value if morsel is not None and _TOKEN.match(morsel.value) else None


def describe_browser(user_agent: str) -> str:
    """`Firefox on Linux (3fa2)`: how `gsv web list` names a signed-in browser; the
    suffix keeps two browsers of one kind apart."""
    name = next((label for mark, label in _BROWSERS if mark in user_agent), "browser")
    system = next((label for mark, label in _SYSTEMS if mark in user_agent), "")
    return f"{name}{' on ' + system if system else ''} ({secrets.token_hex(2)})"


def session_cookie(token: str, secure: bool) -> str:
    attributes = [f"{COOKIE}={token}", "Path=/", "HttpOnly", "SameSite=Strict",
                  f"Max-Age={WEB_SESSION_MS // 1000}"]  # fmt: skip
    if secure:
        attributes.append("Secure")
    return "; ".join(attributes)


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
    headers = security_headers(pages.server_header)
    headers["Location"] = "/"
    headers["Set-Cookie"] = session_cookie(redeemed.token, secure)
    headers["Cache-Control"] = "no-store"
    headers["Content-Length"] = "0"
    return Response(303, "See Other", headers, b"")
