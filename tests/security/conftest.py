"""The agent fixtures (a gateway with a scripted model, its client, its event log) for the
security tests (who may do what: docs/security.md)."""

from tests.agent.conftest import client, fake, gw, log  # noqa: F401
