"""The cron fixtures (a gateway with a scripted model and a clock the test moves) and
the real-SDK ones (the fake LLM server and a gateway in a thread)."""

from tests.cron.conftest import client, clock, database, fake, gw  # noqa: F401
from tests.e2e.conftest import live, llm  # noqa: F401
