"""The agent fixtures (a gateway with a scripted model, its client) for channel tests that
do not need their own; modules that define `fake`, `gw` or `client` keep theirs."""

from tests.agent.conftest import client  # noqa: F401
from tests.agent.conftest import fake  # noqa: F401
from tests.agent.conftest import gw  # noqa: F401
