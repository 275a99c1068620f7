"""Global CLI options and how they resolve: flag > environment > local config > default."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gsv_core.defaults import DEFAULT_GATEWAY_URL


@dataclass
class CliState:
    url_flag: str | None = None
    token_flag: str | None = None
    json: bool = False

    def wants_json(self, flag: bool = False) -> bool:
        """JSON output: asked for by the command's own `--json` or the global one."""
        return flag or self.json

    def url(self) -> str:
        """--url, then GSV_URL, then local config `gateway.url`, then the default; an
        http(s) URL stops with the ws URL it most likely means."""
        return _checked(self._url())

    def _url(self) -> str:
        if self.url_flag:
            return self.url_flag
        env = os.environ.get("GSV_URL", "").strip()
        if env:
            return env
        from gsv_core.localconfig import load_local_config

        configured = load_local_config().get("gateway.url")
        return configured if isinstance(configured, str) and configured else DEFAULT_GATEWAY_URL

    def token(self) -> str | None:
        """--token, then GSV_TOKEN, then the secret store (`gateway.token`)."""
        if self.token_flag:
            return self.token_flag
        from gsv_core.localconfig import get_secret

        return get_secret("gateway.token")


def http_base(ws_url: str) -> str:
    """The gateway's plain HTTP address for its WebSocket URL: `ws://host:port/ws` ->
    `http://host:port` (wss -> https); a path before `/ws` (a reverse proxy's) is kept."""
    from urllib.parse import urlsplit
    from urllib.parse import urlunsplit

    parts = urlsplit(ws_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path.removesuffix("/ws"), "", ""))


def _checked(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        from gsv_cli import output

        scheme = "wss" if parts.scheme == "https" else "ws"
        output.fail(
            f"{url} is an HTTP URL; the gateway speaks WebSocket",
            f"did you mean {scheme}://{parts.netloc}/ws ?",
        )
    if parts.scheme not in ("ws", "wss"):  # `127.0.0.1:8787`, `localhost`: no scheme
        from gsv_cli import output

        bare = url.split("://", 1)[-1].strip("/") or "127.0.0.1:8787"
        output.fail(f"{url} is not a ws:// or wss:// URL", f"did you mean ws://{bare}/ws ?")
    return url
