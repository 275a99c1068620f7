"""The agent fixtures (gateway with a scripted model, client, event log) for approvals, and
a process holding a provider key in its environment, as a gateway may."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.agent.conftest import client, fake, gw, log  # noqa: F401

PROVIDER_KEY = "sk-ant-CANARYKEY"


@pytest.fixture
def key_holder() -> Iterator[int]:
    """The pid of a live child whose environment holds ANTHROPIC_API_KEY=PROVIDER_KEY."""
    # first in the environment, where a listing cut to the screen's width still shows it
    env = {"ANTHROPIC_API_KEY": PROVIDER_KEY, **os.environ}
    env["ANTHROPIC_API_KEY"] = PROVIDER_KEY
    child = subprocess.Popen(["sleep", "300"], env=env)
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()
