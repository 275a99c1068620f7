"""A gateway with a frozen clock the test moves (the cron fixtures), for the retention
sweep's tests."""

from tests.cron.conftest import client, clock, database, fake, gw  # noqa: F401
