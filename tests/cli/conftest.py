"""A real gateway in a thread with a scripted model, for CLI commands that need a run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.threaded import threaded_gateway


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
def live(tmp_path: Path, fake: FakeProvider) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "data" / "gsv.db", provider_factory=fake.factory) as running:
        yield running
