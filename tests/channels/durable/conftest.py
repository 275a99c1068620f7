"""A gateway with a frozen clock the test moves (the cron fixtures) and the test channel,
for the tests of what survives a restart: the durable outbox and the journal."""

import pytest

from gsv_core.channels.test_channel import TestChannel
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.channels.test_pipeline import open_policy
from tests.cron.conftest import client  # noqa: F401
from tests.cron.conftest import clock  # noqa: F401
from tests.cron.conftest import database  # noqa: F401
from tests.cron.conftest import gw  # noqa: F401


@pytest.fixture
async def test_channel(gw: RunningGateway, client: GatewayClient) -> TestChannel:  # noqa: F811
    await open_policy(client)
    await client.call("channel.start", {"channel": "test"})
    adapter = gw.gateway.channels.adapters["test"]
    assert isinstance(adapter, TestChannel)
    return adapter
