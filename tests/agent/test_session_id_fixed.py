"""A session's id does not change under a client (issue 40.10): the first session.get of a
key fixes the id its session will have, so after an idle reset the client finds it in
`previousSessionIds`. Raw calls, as a client written for the original would make them."""

from __future__ import annotations

import asyncio

from gsv_core.client import GatewayClient
from tests.agent.conftest import EventLog
from tests.agent.conftest import send

KEY = "agent:main:cli:dm:fresh"


async def test_get_patch_send_get_keeps_the_first_id_in_the_history_of_ids(
    client: GatewayClient, log: EventLog
) -> None:
    first = (await client.call("session.get", {"sessionKey": KEY}))["sessionId"]
    again = (await client.call("session.get", {"sessionKey": KEY}))["sessionId"]
    assert again == first, "a key never used keeps the id it was first read with"
    policy = {"mode": "idle", "idleMinutes": 0}
    await client.call("session.patch", {"sessionKey": KEY, "resetPolicy": policy})
    patched = (await client.call("session.get", {"sessionKey": KEY}))["sessionId"]
    assert patched == first
    run = (await send(client, "hello", key=KEY))["runId"]
    assert (await log.ended(run))["state"] == "final"
    after = await client.call("session.get", {"sessionKey": KEY})
    assert after["sessionId"] != first and first in after["previousSessionIds"]


async def test_two_first_reads_at_once_agree(client: GatewayClient) -> None:
    key = "agent:main:cli:dm:twice"
    reads = await asyncio.gather(*(client.call("session.get", {"sessionKey": key})
                                   for _ in range(5)))  # fmt: skip
    assert len({r["sessionId"] for r in reads}) == 1
    history = await client.call("session.history", {"sessionKey": key})
    assert history["currentSessionId"] == reads[0]["sessionId"]
