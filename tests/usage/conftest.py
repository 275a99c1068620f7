"""The cron fixtures (a gateway with a scripted model and a clock the test moves) and
the real-SDK ones (the fake LLM server and a gateway in a thread)."""

from tests.cron.conftest import client  # noqa: F401
from tests.cron.conftest import clock  # noqa: F401
from tests.cron.conftest import database  # noqa: F401
from tests.cron.conftest import fake  # noqa: F401
from tests.cron.conftest import gw  # noqa: F401
from tests.e2e.conftest import live  # noqa: F401
from tests.e2e.conftest import llm  # noqa: F401
