"""The `## Skills (Mandatory Scan)` section: golden text, and its snapshot per run in a
real gateway with the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from gsv_core.gateway.server import ServerConfig
from gsv_core.gateway.server import serve
from gsv_core.skills.discovery import SkillFile
from gsv_core.skills.eligibility import SkillHost
from gsv_core.skills.eligibility import SkillStatus
from gsv_core.skills.eligibility import evaluate
from gsv_core.skills.manifest import parse_manifest
from gsv_core.skills.policy import apply_policy
from gsv_core.skills.prompt import read_tool_name
from gsv_core.skills.prompt import skills_section
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.skills.conftest import skill_text
from tests.skills.conftest import until
from tests.skills.conftest import workspace_dir
from tests.skills.conftest import write_skill

SOURCES = {
    "tmux": "---\nname: tmux\ndescription: Long jobs in tmux & friends <fast>.\nbins: [tmux]\n---\n# tmux\n",
    "house-rules": "---\ndescription: How we work here.\nalways: true\n---\n# House rules\n\n- Be brief.\n- Ask first.\n",
    "notes": "# Notes\n\nKeep notes in memory/.\n",
    "gh": "---\ndescription: GitHub.\nbins: [gh]\n---\n",
    "off": "---\ndescription: Off.\n---\n",
}

GOLDEN = """## Skills (Mandatory Scan)
Skills are instructions for particular kinds of work. Before you reply, scan the descriptions in <available_skills>.
- If exactly one skill clearly applies, read its <read_path> with `gsv__ReadFile` first, then follow it.
- If several apply, choose the most specific one and read only that one.
- If none applies, read none.
- Read at most one skill up front; read another only when the work moves on to it.
- A skill that lists <nodes> works on those nodes only: use their tools for it.
- Skills marked always="true" are included in full; do not read them again.
Config filter: 1 skill(s) hidden by skills.entries policy.
Requirement filter: 1 skill(s) hidden because no connected node meets their requirements.
Invalid filter: 1 skill(s) hidden because their SKILL.md is invalid.
<available_skills>
<skill name="tmux">
<description>Long jobs in tmux &amp; friends &lt;fast&gt;.</description>
<location>skills/tmux/SKILL.md</location>
<read_path>skills/tmux/SKILL.md</read_path>
<nodes>n1</nodes>
</skill>
<skill name="house-rules" always="true">
<description>How we work here.</description>
<location>agents/main/skills/house-rules/SKILL.md</location>
<read_path>skills/house-rules/SKILL.md</read_path>
<content>
# House rules

- Be brief.
- Ask first.
</content>
</skill>
<skill name="notes">
<description>Keep notes in memory/.</description>
<location>skills/notes/SKILL.md</location>
<read_path>skills/notes/SKILL.md</read_path>
</skill>
</available_skills>"""


def statuses() -> list[SkillStatus]:
    files = []
    for key, text in SOURCES.items():
        agent = key == "house-rules"
        location = f"agents/main/skills/{key}/SKILL.md" if agent else f"skills/{key}/SKILL.md"
        files.append(SkillFile(key, location, "agent" if agent else "global",
                               parse_manifest(text, key)))  # fmt: skip
    files.append(SkillFile("broken", "skills/broken/SKILL.md", "global", None, "invalid YAML"))
    skills = apply_policy(files, {"off": {"enabled": False}})
    hosts = [SkillHost("n1", ("shell.exec",), "linux")]
    bins = {"n1": {"tmux": True, "gh": False}}
    return [SkillStatus(skill, evaluate(skill, hosts, bins)) for skill in skills]


def test_the_section_matches_the_golden_text() -> None:
    """Instructions, filter counts, eligible skills with paths and nodes, always inlined,
    markup in descriptions escaped; hidden skills are left out."""
    assert skills_section(statuses()) == GOLDEN


def test_no_eligible_skill_means_no_section() -> None:
    """Only hidden skills: the section is empty (and dropped from the prompt)."""
    hidden = [s for s in statuses() if not s.verdict.eligible]
    assert skills_section(hidden) == ""


def test_the_read_tool_is_named_as_the_run_spells_it() -> None:
    """The workspace read tool is matched case-insensitively; gsv__ReadFile by default."""
    assert read_tool_name(["n1__Read", "GSV__readfile"]) == "GSV__readfile"
    assert read_tool_name([]) == "gsv__ReadFile"
    assert "`GSV__readfile`" in skills_section(statuses(), "GSV__readfile")


@pytest.fixture
def fake() -> FakeProvider:
    return FakeProvider()


@pytest.fixture
async def gw(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[RunningGateway]:
    config = ServerConfig(database=tmp_path / "data" / "gsv.db", provider_factory=fake.factory)
    async with serve(config, port=0) as running:
        yield running


async def run_to_end(client: GatewayClient, gw: RunningGateway, message: str) -> None:
    sent = await client.call("chat.send", {"sessionKey": "agent:main:main", "message": message})
    actor = gw.gateway.sessions.loaded("agent:main:main")
    assert actor is not None
    await actor.run_outcome(sent["runId"])


async def test_the_skills_list_is_snapshotted_per_run(
    gw: RunningGateway, fake: FakeProvider
) -> None:
    """A skill written during a run appears from the next run on, not in the same run's
    later model calls; skills needing no node are listed without nodes."""
    await gw.gateway.workspace.delete("main", "BOOTSTRAP.md")  # leave commissioning mode
    # the owner's rule: writing a skill would ask first (docs/approvals.md)
    rule = {"id": "skills", "tool": "gsv__WriteFile", "decision": "allow"}
    await gw.gateway.config.set("toolApproval.rules", [rule])
    write_skill(workspace_dir(gw), "first", skill_text(description="the first skill"))
    fake.enqueue(call("gsv__WriteFile", {"path": "skills/second/SKILL.md",
                                         "content": skill_text(description="the second skill")}))  # fmt: skip
    fake.enqueue("done")
    async with GatewayClient(gw.url, token=gw.token) as client:
        await run_to_end(client, gw, "add a skill")
        await run_to_end(client, gw, "again")
    await until(lambda: len(fake.requests) >= 3, "three model calls")
    first, second, third = (request.system for request in fake.requests[:3])
    assert "<description>the first skill</description>" in first
    assert "the second skill" not in first and "the second skill" not in second
    assert "<read_path>skills/second/SKILL.md</read_path>" in third
    assert "<location>agents/main/skills/second/SKILL.md</location>" in third


async def test_a_commissioning_agent_gets_no_skills_section(
    gw: RunningGateway, fake: FakeProvider
) -> None:
    """While BOOTSTRAP.md exists the skills section is left out."""
    write_skill(workspace_dir(gw), "first", skill_text(description="the first skill"))
    async with GatewayClient(gw.url, token=gw.token) as client:
        await run_to_end(client, gw, "hello")
    assert "Skills (Mandatory Scan)" not in fake.requests[0].system


async def test_snapshots_of_ended_runs_are_forgotten(
    gw: RunningGateway, fake: FakeProvider
) -> None:
    """Runs in many sessions (as every cron run has its own) leave at most one snapshot
    behind: the map of per-run skills sections does not grow with each session."""
    await gw.gateway.workspace.delete("main", "BOOTSTRAP.md")
    write_skill(workspace_dir(gw), "first", skill_text(description="the first skill"))
    async with GatewayClient(gw.url, token=gw.token) as client:
        for n in range(5):
            fake.enqueue(f"answer {n}")
            key = f"agent:main:cron:job:run{n}"
            sent = await client.call("chat.send", {"sessionKey": key, "message": "go"})
            actor = gw.gateway.sessions.loaded(key)
            assert actor is not None
            await actor.run_outcome(sent["runId"])
    assert len(fake.requests) == 5 and "the first skill" in fake.requests[-1].system
    assert len(gw.gateway.sessions.host._skills_snapshots) <= 1  # type: ignore[attr-defined]
