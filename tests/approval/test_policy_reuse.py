"""The gateway builds its approval policy once and again only when what it is made of
changes: the config (a write replaces it) or the processes it protects (a node with its
own pid connects or leaves). A stale policy would judge with yesterday's rules."""

from __future__ import annotations

import os

from gsv_core.approval.policy import ALLOW
from gsv_core.approval.policy import ASK
from gsv_core.approval.policy import CallFacts
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.tool_router import GatewayToolRouter
from tests.waiting import until
from tests.wire import handshake
from tests.wire import node_runtime
from tests.wire import open_raw

TOOLS = [{"name": "Read", "description": "read", "inputSchema": {"type": "object"}}]


def router(gw: RunningGateway) -> GatewayToolRouter:
    tools = gw.gateway.sessions.host.tools
    assert isinstance(tools, GatewayToolRouter)
    return tools


async def test_the_policy_is_reused_between_calls(gw: RunningGateway) -> None:
    tools = router(gw)
    assert tools.policy() is tools.policy()


async def test_a_config_write_gives_a_policy_with_the_new_rule(
    gw: RunningGateway, client: GatewayClient
) -> None:
    tools = router(gw)
    facts = CallFacts("n1__Read", "Read", "n1", {"path": "notes.txt"})
    before = tools.policy()
    assert before.decide(facts).verdict == ALLOW
    rule = {"id": "ask-reads", "tool": "*__Read", "decision": "ask"}
    await client.call("config.set", {"path": "toolApproval.rules", "value": [rule]})
    after = tools.policy()
    assert after is not before
    assert after.decide(facts).verdict == ASK
    assert tools.policy() is after


async def test_a_node_with_its_own_pid_joins_and_leaves_the_protected_set(
    gw: RunningGateway,
) -> None:
    tools = router(gw)
    foreign_pid = os.getpid() + 100_000  # a node process other than this one
    before = tools.policy()
    assert foreign_pid not in before.protected.pids
    runtime = {**node_runtime(TOOLS, "filesystem.read"), "pid": foreign_pid}
    async with await open_raw(gw.url) as ws:
        await handshake(ws, mode="node", client_id="n1", tools=TOOLS, nodeRuntime=runtime)
        joined = tools.policy()
        assert joined is not before
        assert foreign_pid in joined.protected.pids
    await until(lambda: gw.gateway.nodes.online("n1") is None, "the gateway to notice the close")
    assert foreign_pid not in tools.policy().protected.pids
