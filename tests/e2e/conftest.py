"""The fake LLM server (real HTTP on 127.0.0.1, spoken to by the official SDKs) for the
end-to-end tests."""

from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import FakeLLMServer, fake_llm_server


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        yield server
