"""The agent fixtures (gateway with a scripted model, client, event log) for transfers
under the approval gate."""

from tests.agent.conftest import client, fake, gw, log  # noqa: F401
