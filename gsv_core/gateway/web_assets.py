"""The web chat's files (docs/web.md): `GET /` is the page, `GET /assets/<path>` a file of
it. Only files found under the static directory when the gateway starts are served, each
by its exact relative path: a request path is looked up in that table, never joined onto
the file system, so `..`, encoded slashes or symlinks cannot reach anything else.

Every answer carries the page's Content Security Policy: scripts, styles and connections
from the gateway's own origin only, no inline script, no framing. Files are read once and
gzip-compressed once (they are small); an ETag lets the browser revalidate for free.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

from websockets.datastructures import Headers
from websockets.http11 import Request
from websockets.http11 import Response

PACKAGED_PAGE = Path(__file__).resolve().parent.parent / "web" / "static"
ASSETS_PREFIX = "/assets/"
INDEX = "index.html"
# connect-src names this host's ws:// and wss:// besides 'self' (older browsers do not
# count a WebSocket to the page's own host as 'self'); never any other host, so script that
# got in somehow could not send what it read anywhere else
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'{sockets}; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_HOST = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
# the page and its files: revalidated on every load (an upgraded gateway ships new ones)
_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css",
          ".svg": "image/svg+xml", ".json": "application/json", ".webmanifest":
          "application/manifest+json"}  # fmt: skip
MAX_ASSET_BYTES = 2 * 1024 * 1024  # a file larger than this is not part of the page


def security_headers(host: str = "") -> Headers:
    """Headers every web answer carries (pages, assets, sign-in redirects and errors);
    `host` is the request's Host, trusted only in the shape of a host name and port.
    (`Server` is websockets' to add: serve(server_header=...) puts it on every answer.)"""
    sockets = f" ws://{host} wss://{host}" if _HOST.match(host) else ""
    return Headers(
        {
            "Content-Security-Policy": CSP.format(sockets=sockets),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            "Cross-Origin-Opener-Policy": "same-origin",
        }
    )


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    content_type: str
    etag: str


def load_assets(root: Path) -> dict[str, Asset]:
    """Every regular file under `root` by its `/`-separated relative path (empty when the
    directory is missing: the gateway then serves no page)."""
    if not root.is_dir():
        return {}
    table: dict[str, Asset] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_ASSET_BYTES:
            continue
        relative = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in relative.split("/")):
            continue  # editor and OS droppings
        body = path.read_bytes()
        table[relative] = Asset(
            body, gzip.compress(body, 9, mtime=0), _content_type(path),
            '"' + hashlib.sha256(body).hexdigest()[:20] + '"',
        )  # fmt: skip
    return table


def _content_type(path: Path) -> str:
    known = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
    kind = known or "application/octet-stream"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") or kind.endswith("json") else kind


class WebAssets:
    """Answers `GET /` and `GET /assets/...` from the table `load_assets` built."""

    def __init__(self, root: Path) -> None:
        self.table = load_assets(root)

    def wants(self, path: str) -> bool:
        return path == "/" or path.startswith(ASSETS_PREFIX)

    def respond(self, request: Request, path: str) -> Response:
        name = INDEX if path == "/" else path.removeprefix(ASSETS_PREFIX)
        asset = self.table.get(name)
        if asset is None:
            return self.error(404, "Not found")
        headers = security_headers(request.headers.get("Host", ""))
        headers["Cache-Control"] = "no-cache"
        headers["ETag"] = asset.etag
        headers["Vary"] = "Accept-Encoding"
        if request.headers.get("If-None-Match") == asset.etag:
            return Response(304, "Not Modified", headers, b"")
        headers["Content-Type"] = asset.content_type
        body = asset.body
        if "gzip" in request.headers.get("Accept-Encoding", "") and len(asset.gzipped) < len(body):
            headers["Content-Encoding"] = "gzip"
            body = asset.gzipped
        headers["Content-Length"] = str(len(body))
        return Response(200, "OK", headers, body)

    def error(self, status: int, message: str, hint: str = "") -> Response:
        """A small plain page (text, never markup built from the request)."""
        body = (message + ("\n\n" + hint if hint else "") + "\n").encode()
        headers = security_headers()
        headers["Content-Type"] = "text/plain; charset=utf-8"
        headers["Content-Length"] = str(len(body))
        headers["Cache-Control"] = "no-store"
        return Response(status, _REASONS.get(status, "Error"), headers, body)


_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests"}
