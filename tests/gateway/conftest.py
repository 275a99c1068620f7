"""Fixtures for gateway tests: a real gateway whose provider is a FakeProvider, an owner
socket connected as a client written for the original, and a TLS certificate."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection

from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.fakes.provider import FakeProvider
from tests.wire import connect_minimal
from tests.wire import owner_token


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


@pytest.fixture
async def owner(gw: RunningGateway) -> AsyncIterator[ClientConnection]:
    client = {"id": "old-cli", "mode": "client"}
    ws = await connect_minimal(gw.url, client, auth={"token": owner_token()})
    yield ws
    await ws.close()


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
