"""`skills.status` / `skills.update` over the wire, against a real gateway with real node
daemons (probes answered by the node's real PATH) and raw node sockets for the odd
cases (a node without a shell, a node that never answers)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gsv_core.client import GatewayClient
from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidParams
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from tests.skills.conftest import running_node
from tests.skills.conftest import skill_text
from tests.skills.conftest import workspace_dir
from tests.skills.conftest import write_skill
from tests.wire import handshake
from tests.wire import open_raw
from tests.wire import request

STATUS_KEYS = {"agentId", "refreshedAt", "requiredBins", "nodes", "skills"}
NODE_KEYS = {"nodeId", "hostRole", "hostCapabilities", "hostOs", "hostEnv", "hostBins",
             "hostBinStatusUpdatedAt", "canProbeBins"}  # fmt: skip
SKILL_KEYS = {"name", "description", "location", "always", "eligible", "eligibleHosts",
              "reasons", "requirements"}  # fmt: skip
SEARCH_TOOL = {"name": "Grep", "description": "search", "inputSchema": {"type": "object"}}
MISSING = "no-such-binary-xyz"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def gw(tmp_path: Path, clock: Clock) -> AsyncIterator[RunningGateway]:
    async with serve(
        ServerConfig(database=tmp_path / "data" / "gsv.db", now_ms=clock), port=0
    ) as running:
        for name in ("gsv-cli", "tmux", "git-commit"):  # the bundled ones depend on the host
            (workspace_dir(running) / "skills" / name / "SKILL.md").unlink()
        yield running


@pytest.fixture
async def client(gw: RunningGateway) -> AsyncIterator[GatewayClient]:
    async with GatewayClient(gw.url, token=gw.token) as connected:
        yield connected


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {skill["name"]: skill for skill in result["skills"]}


async def test_status_has_the_seed_shape_and_probes_a_real_node(
    gw: RunningGateway, client: GatewayClient, tmp_path: Path
) -> None:
    """Nodes and skills carry exactly the wire fields (docs/protocol.md); the real node's probe finds `sh`
    and not a made-up binary; reasons name the node and what it lacks."""
    root = workspace_dir(gw)
    write_skill(root, "shell", skill_text(bins=["sh"], capabilities=["shell.exec"]))
    write_skill(root, "missing", skill_text(bins=[MISSING]))
    write_skill(root, "env", skill_text(env=["HOME"], os=["linux", "macos", "windows"]))
    write_skill(root, "plain", skill_text(description="needs nothing"))
    async with running_node(gw, tmp_path):
        result = await client.call("skills.status")
    assert set(result) == STATUS_KEYS and result["agentId"] == "main"
    assert result["refreshedAt"] == 1_800_000_000_000
    assert result["requiredBins"] == [MISSING, "sh"]
    (node,) = result["nodes"]
    assert set(node) == NODE_KEYS and node["nodeId"] == "n1" and node["canProbeBins"]
    assert node["hostBins"] == ["sh"] and node["hostBinStatusUpdatedAt"] == 1_800_000_000_000
    assert "HOME" in node["hostEnv"] and "shell.exec" in node["hostCapabilities"]
    skills = by_name(result)
    assert list(skills) == ["env", "missing", "plain", "shell"]
    assert all(set(skill) == SKILL_KEYS for skill in skills.values())
    assert skills["shell"]["eligible"] and skills["shell"]["eligibleHosts"] == ["n1"]
    assert skills["env"]["eligibleHosts"] == ["n1"]
    assert skills["plain"] == {
        "name": "plain", "description": "needs nothing", "location": "skills/plain/SKILL.md",
        "always": False, "eligible": True, "eligibleHosts": [], "reasons": [],
        "requirements": {"bins": [], "anyBins": [], "env": [], "os": [], "capabilities": []},
    }  # fmt: skip
    assert skills["missing"]["eligible"] is False
    assert skills["missing"]["reasons"] == [f"n1: lacks bins {MISSING}"]


async def test_without_nodes_skills_with_requirements_say_so(
    client: GatewayClient, gw: RunningGateway
) -> None:
    """No node connected: node skills are ineligible with 'no connected nodes'."""
    write_skill(workspace_dir(gw), "shell", skill_text(bins=["sh"]))
    result = await client.call("skills.status", {})
    assert result["nodes"] == []
    assert by_name(result)["shell"]["reasons"] == ["no connected nodes; it needs bins sh"]


async def test_update_reprobes_only_stale_nodes_unless_forced(
    gw: RunningGateway, client: GatewayClient, clock: Clock, tmp_path: Path
) -> None:
    """Fresh answers are skipped; --force asks anyway; after skills.probeMaxAgeMs the
    node is asked again."""
    write_skill(workspace_dir(gw), "shell", skill_text(bins=["sh"]))
    await client.call("config.set", {"path": "skills.probeMaxAgeMs", "value": 60_000})
    async with running_node(gw, tmp_path):
        fresh = await client.call("skills.update", {})
        assert (fresh["updatedNodeCount"], fresh["skippedNodeIds"], fresh["errors"]) == (1, [], [])
        again = await client.call("skills.update", {})
        assert (again["updatedNodeCount"], again["skippedNodeIds"]) == (0, ["n1"])
        forced = await client.call("skills.update", {"force": True, "timeoutMs": 5000})
        assert (forced["updatedNodeCount"], forced["skippedNodeIds"]) == (1, [])
        clock.now += 60_001
        stale = await client.call("skills.update", {"agentId": "main"})
        assert stale["updatedNodeCount"] == 1
        assert stale["nodes"][0]["hostBinStatusUpdatedAt"] == clock.now
    assert set(stale) == STATUS_KEYS | {"updatedNodeCount", "skippedNodeIds", "errors"}
    assert by_name(stale)["shell"]["eligible"]


async def test_a_node_without_a_shell_is_skipped_and_explained(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """A search-only node cannot be probed: skipped by update, and the reason says so."""
    write_skill(workspace_dir(gw), "shell", skill_text(bins=["sh"]))
    write_skill(workspace_dir(gw), "search", skill_text(capabilities=["text.search"]))
    async with await open_raw(gw.url) as node:
        await handshake(node, mode="node", client_id="s1", tools=[SEARCH_TOOL],
                        nodeRuntime={"hostCapabilities": ["text.search"],
                                     "toolCapabilities": {"Grep": ["text.search"]}})  # fmt: skip
        result = await client.call("skills.update", {"force": True})
    assert (result["updatedNodeCount"], result["skippedNodeIds"]) == (0, ["s1"])
    assert result["nodes"][0]["canProbeBins"] is False
    skills = by_name(result)
    assert skills["shell"]["reasons"] == ["s1: cannot check bins sh (no shell.exec)"]
    assert skills["search"]["eligibleHosts"] == ["s1"]


async def test_a_node_that_never_answers_is_reported_as_an_error(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """A probe that times out is listed in `errors`; the skill's reason names the failure
    and the node got exactly one node.probe for the bins."""
    write_skill(workspace_dir(gw), "shell", skill_text(bins=["sh"]))
    async with await open_raw(gw.url) as node:
        await handshake(node, mode="node", client_id="mute", tools=[SEARCH_TOOL],
                        nodeRuntime={"hostCapabilities": ["shell.exec", "text.search"],
                                     "toolCapabilities": {"Grep": ["text.search"]}})  # fmt: skip
        result = await client.call("skills.update", {"timeoutMs": 1000})
        assert result["errors"] == ["mute: node.probe timed out for node mute"]
        assert result["updatedNodeCount"] == 0
        reasons = by_name(result)["shell"]["reasons"]
        assert reasons == [
            "mute: bins sh unknown: probe failed (node.probe timed out for node mute)"
        ]
        # a status soon after does not ask the failing node again
        status = await client.call("skills.status")
        assert by_name(status)["shell"]["reasons"] == reasons
        assert await probes_received(node) == 1


async def probes_received(node: Any) -> int:
    """node.probe events the raw node socket got so far: frames are written in order, so
    every event sent before a reply to our own request arrives before that reply."""
    await node.send(json.dumps({"type": "req", "id": "mark", "method": "tools.list"}))
    count = 0
    while True:
        frame = json.loads(await node.recv())
        if frame.get("type") == "res" and frame.get("id") == "mark":
            return count
        count += frame.get("type") == "evt" and frame.get("event") == "node.probe"


async def test_agent_local_skills_are_per_agent(gw: RunningGateway, client: GatewayClient) -> None:
    """agentId picks whose own skills are seen; its copy shadows the global one."""
    root = workspace_dir(gw)
    write_skill(root, "notes", skill_text(description="global notes"))
    write_skill(root, "notes", skill_text(description="ops notes"), agent="ops")
    ops = await client.call("skills.status", {"agentId": "ops"})
    main = await client.call("skills.status")
    assert ops["agentId"] == "ops" and by_name(ops)["notes"]["description"] == "ops notes"
    assert by_name(ops)["notes"]["location"] == "agents/ops/skills/notes/SKILL.md"
    assert by_name(main)["notes"]["description"] == "global notes"


async def test_config_entries_hide_skills_with_a_reason(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """skills.entries.<name>.enabled=false reports the skill ineligible with the policy reason."""
    write_skill(workspace_dir(gw), "notes", skill_text())
    await client.call("config.set", {"path": "skills.entries.notes", "value": {"enabled": False}})
    notes = by_name(await client.call("skills.status"))["notes"]
    assert notes["eligible"] is False
    assert notes["reasons"] == ["disabled by skills.entries policy"]


async def test_a_malformed_skill_is_listed_as_ineligible_with_the_yaml_error(
    gw: RunningGateway, client: GatewayClient
) -> None:
    """Bad YAML never breaks the status: the skill shows with the parse error as its reason."""
    write_skill(workspace_dir(gw), "broken", "---\nname: [oops\n---\n")
    broken = by_name(await client.call("skills.status"))["broken"]
    assert broken["eligible"] is False
    assert broken["reasons"][0].startswith("invalid YAML frontmatter:")


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("skills.update", {"timeoutMs": 0}, "timeoutMs"),
        ("skills.update", {"timeoutMs": 999_999}, "timeoutMs"),
        ("skills.update", {"force": "maybe"}, "force"),
        ("skills.status", {"agentId": 7}, "agentId"),
        ("skills.status", {"agentId": ""}, "agentId"),
        ("skills.status", {"agentId": "../etc"}, "invalid agentId"),
    ],
)
async def test_bad_params_are_400_naming_the_field(
    client: GatewayClient, method: str, params: dict[str, Any], field: str
) -> None:
    """Out-of-range timeouts, non-boolean force and bad agent ids are refused with 400."""
    with pytest.raises(InvalidParams) as caught:
        await client.call(method, params)
    assert field in caught.value.message


async def test_nodes_may_not_ask_for_skills(gw: RunningGateway) -> None:
    """skills.* are client methods: a node gets 403."""
    async with await open_raw(gw.url) as node:
        await handshake(node, mode="node", client_id="n9", tools=[SEARCH_TOOL])
        reply = await request(node, "skills.status", {})
    assert reply["error"]["code"] == Forbidden.code
