"""The HTTP surface: /health, /ws upgrade only, 404 for everything else (the web chat's
`/`, `/assets/...` and `/auth` are tested in test_web_front)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest

from gsv_core.gateway.server import RunningGateway


def _get(url: str) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_health_answers_healthy(gateway: RunningGateway) -> None:
    """GET /health -> 200 {"status":"healthy"}."""
    status, body = await asyncio.to_thread(_get, gateway.http_url + "/health")
    assert (status, body) == (200, {"status": "healthy"})


@pytest.mark.parametrize("path", ["/ws", "/media/abc.png", "/healthz", "/index.html"])
async def test_anything_else_is_404(gateway: RunningGateway, path: str) -> None:
    """Other paths, and /ws without an upgrade, are 404."""
    status, body = await asyncio.to_thread(_get, gateway.http_url + path)
    assert status == 404
    assert "error" in body
