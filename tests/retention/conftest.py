"""A gateway with a frozen clock the test moves (the cron fixtures), for the retention
sweep's tests."""

from tests.cron.conftest import client  # noqa: F401
from tests.cron.conftest import clock  # noqa: F401
from tests.cron.conftest import database  # noqa: F401
from tests.cron.conftest import fake  # noqa: F401
from tests.cron.conftest import gw  # noqa: F401
