"""The agent fixtures (a gateway with a scripted model, a client, an event log)."""

from tests.agent.conftest import client, fake, gw, log  # noqa: F401
