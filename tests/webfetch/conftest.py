"""The agent fixtures (a gateway with a scripted model, a client, an event log)."""

from tests.agent.conftest import client  # noqa: F401
from tests.agent.conftest import fake  # noqa: F401
from tests.agent.conftest import gw  # noqa: F401
from tests.agent.conftest import log  # noqa: F401
