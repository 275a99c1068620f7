"""The agent fixtures (gateway with a scripted model, client, event log) for approvals."""

from tests.agent.conftest import client  # noqa: F401
from tests.agent.conftest import fake  # noqa: F401
from tests.agent.conftest import gw  # noqa: F401
from tests.agent.conftest import log  # noqa: F401
