"""The agent fixtures (gateway with a scripted model, client, event log) for approvals."""

from tests.agent.conftest import client, fake, gw, log  # noqa: F401
