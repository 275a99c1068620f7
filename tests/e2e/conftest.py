"""The real-SDK fixtures: the fake LLM server on 127.0.0.1 and a gateway in a thread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.threaded import threaded_gateway


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db") as running:
        yield running
