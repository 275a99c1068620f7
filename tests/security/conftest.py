"""The agent fixtures (a gateway with a scripted model, its client, its event log) for the
security tests (who may do what: docs/security.md)."""

from tests.agent.conftest import client  # noqa: F401
from tests.agent.conftest import fake  # noqa: F401
from tests.agent.conftest import gw  # noqa: F401
from tests.agent.conftest import log  # noqa: F401
