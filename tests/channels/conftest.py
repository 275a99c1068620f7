"""The agent fixtures (a gateway with a scripted model, its client) for channel tests that
do not need their own; modules that define `fake`, `gw` or `client` keep theirs."""

from tests.agent.conftest import client, fake, gw  # noqa: F401
