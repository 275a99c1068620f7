"""`SkillService`: an agent's skills with their eligibility over the connected nodes, the
probing of those nodes for binaries, the prompt section and the bundled skills' seeding.

The gateway supplies the nodes through the `NodeAccess` protocol (what is connected,
and a way to send `node.probe`), so this package never imports the gateway. Statuses
first ask nodes whose answers are missing or older than `skills.probeMaxAgeMs` (briefly,
and not again soon after a failed probe); a run's prompt never waits for a node: it asks
in the background and uses what is known (a node of the original never answers
`node.probe`); `skills.update` asks on demand, every node with `force`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Protocol

from gsv_core.config import setting
from gsv_core.errors import GsvError
from gsv_core.protocol.schemas.skills import SkillNodeStatus
from gsv_core.protocol.schemas.skills import SkillsStatusResult
from gsv_core.protocol.schemas.skills import SkillStatusEntry
from gsv_core.protocol.schemas.skills import SkillsUpdateResult
from gsv_core.skills.bincache import BinCache
from gsv_core.skills.bundled import seed_bundled
from gsv_core.skills.discovery import scan_skills
from gsv_core.skills.eligibility import SkillHost
from gsv_core.skills.eligibility import SkillStatus
from gsv_core.skills.eligibility import evaluate
from gsv_core.skills.policy import Skill
from gsv_core.skills.policy import apply_policy
from gsv_core.skills.prompt import read_tool_name
from gsv_core.skills.prompt import skills_section
from gsv_core.workspace.paths import validate_agent_id
from gsv_core.workspace.workspace import Workspace

log = logging.getLogger(__name__)

# statuses (and background probes for prompts) wait this long for nodes' answers;
# `skills.update` takes its own
AUTO_PROBE_TIMEOUT = 5.0


class NodeAccess(Protocol):
    def hosts(self) -> list[SkillHost]:
        """The connected nodes, sorted by id."""
        ...

    async def probe_bins(self, node_id: str, bins: list[str], timeout: float) -> dict[str, bool]:
        """Which of `bins` the node has (`node.probe`); GsvError on failure."""
        ...


@dataclass(frozen=True)
class ProbeReport:
    updated: int = 0
    skipped: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assessment:
    """An agent's skills judged against the nodes at one moment."""

    agent_id: str
    at: int
    statuses: list[SkillStatus]
    hosts: list[SkillHost]
    required_bins: list[str]


class SkillService:
    def __init__(
        self,
        workspace: Workspace,
        nodes: NodeAccess,
        config: Callable[[], Mapping[str, Any]],
        now_ms: Callable[[], int],
        bundled_state: Path | None = None,
    ) -> None:
        self.workspace = workspace
        self.nodes = nodes
        self._config = config
        self._now = now_ms
        self._bundled_state = bundled_state
        self.bins = BinCache(now_ms)
        self._probing: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[ProbeReport]] = set()

    # -- the API ------------------------------------------------------------------------
    async def seed_bundled(self) -> list[str]:
        """Put the bundled skills into the global area (once; see `bundled`)."""
        if self._bundled_state is None:
            return []
        backend, state = self.workspace.backend, self._bundled_state
        return await asyncio.to_thread(seed_bundled, backend, state)

    async def skills(self, agent_id: str) -> list[Skill]:
        """The agent's skills with the config policy applied (not yet judged)."""
        validate_agent_id(agent_id)
        files = await asyncio.to_thread(scan_skills, self.workspace.backend, agent_id)
        return apply_policy(files, self._entries())

    async def assess(self, agent_id: str, probe_timeout: float = AUTO_PROBE_TIMEOUT) -> Assessment:
        """Judge the agent's skills, first asking nodes whose bin answers are missing or
        stale (skipping nodes whose last probe failed recently)."""
        skills = await self.skills(agent_id)
        bins = required_bins(skills)
        await self.refresh(bins, force=False, timeout=probe_timeout, auto=True)
        return self._judge(agent_id, skills, bins)

    async def status(self, agent_id: str) -> SkillsStatusResult:
        return self._result(await self.assess(agent_id))

    async def update(self, agent_id: str, force: bool, timeout: float) -> SkillsUpdateResult:
        """Probe the nodes (all of them with `force`, else those not fresh) and report."""
        skills = await self.skills(agent_id)
        bins = required_bins(skills)
        report = await self.refresh(bins, force=force, timeout=timeout, auto=False)
        base = self._result(self._judge(agent_id, skills, bins))
        return SkillsUpdateResult(
            **base.model_dump(),
            updatedNodeCount=report.updated,
            skippedNodeIds=list(report.skipped),
            errors=list(report.errors),
        )

    async def prompt_section(self, agent_id: str, tool_names: Iterable[str]) -> str:
        """The skills part of a run's prompt, judged on the answers known now: nodes that
        need asking are asked in the background, for the next run."""
        skills = await self.skills(agent_id)
        bins = required_bins(skills)
        self._refresh_in_background(bins)
        assessment = self._judge(agent_id, skills, bins)
        return skills_section(assessment.statuses, read_tool_name(tool_names))

    async def close(self) -> None:
        """Cancel the background probes."""
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    # -- probing ------------------------------------------------------------------------
    def _refresh_in_background(self, bins: list[str]) -> None:
        if not bins:
            return
        refresh = self.refresh(bins, force=False, timeout=AUTO_PROBE_TIMEOUT, auto=True)
        task = asyncio.create_task(refresh)
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[ProbeReport]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background node probe failed", exc_info=task.exception())

    async def refresh(
        self, bins: list[str], *, force: bool, timeout: float, auto: bool
    ) -> ProbeReport:
        """Probe the connected nodes that need it for `bins`, concurrently."""
        max_age = self._max_age_ms()
        planned: list[str] = []
        skipped: list[str] = []
        for host in self.nodes.hosts():
            node_id = host.node_id
            needed = force or bool(self.bins.stale(node_id, bins, max_age))
            if auto and self.bins.failed_recently(node_id, max_age):
                needed = False
            (planned if bins and host.can_probe_bins and needed else skipped).append(node_id)
        outcomes = await asyncio.gather(
            *(self._probe(node_id, bins, timeout, force) for node_id in planned)
        )
        errors = tuple(error for error in outcomes if error is not None)
        return ProbeReport(len(planned) - len(errors), tuple(skipped), errors)

    async def _probe(
        self, node_id: str, bins: list[str], timeout: float, force: bool
    ) -> str | None:
        """Ask one node; the error as `nodeId: message`, None when it answered."""
        lock = self._probing.setdefault(node_id, asyncio.Lock())
        async with lock:  # one probe per node at a time; a waiter may find it done
            if not force and not self.bins.stale(node_id, bins, self._max_age_ms()):
                return None
            try:
                found = await self.nodes.probe_bins(node_id, bins, timeout)
            except GsvError as exc:
                self.bins.record_failure(node_id, exc.message)
                return f"{node_id}: {exc.message}"
            self.bins.record(node_id, found)
            return None

    # -- judging ------------------------------------------------------------------------
    def _judge(self, agent_id: str, skills: list[Skill], bins: list[str]) -> Assessment:
        hosts = [
            dataclasses.replace(host, probe_error=self.bins.get(host.node_id).error)
            for host in self.nodes.hosts()
        ]
        found = {host.node_id: self.bins.get(host.node_id).found() for host in hosts}
        statuses = [SkillStatus(skill, evaluate(skill, hosts, found)) for skill in skills]
        return Assessment(agent_id, self._now(), statuses, hosts, bins)

    def _result(self, assessment: Assessment) -> SkillsStatusResult:
        return SkillsStatusResult(
            agentId=assessment.agent_id,
            refreshedAt=assessment.at,
            requiredBins=assessment.required_bins,
            nodes=[self._node_status(host) for host in assessment.hosts],
            skills=[SkillStatusEntry.model_validate(s.to_wire()) for s in assessment.statuses],
        )

    def _node_status(self, host: SkillHost) -> SkillNodeStatus:
        known = self.bins.get(host.node_id)
        return SkillNodeStatus(
            nodeId=host.node_id,
            hostRole=host.role,
            hostCapabilities=list(host.capabilities),
            hostOs=host.os,
            hostEnv=list(host.env),
            hostBins=[name for name, ok in known.found().items() if ok],
            hostBinStatusUpdatedAt=known.updated_at,
            canProbeBins=host.can_probe_bins,
        )

    def _entries(self) -> Mapping[str, Any]:
        entries = self._config().get("skills", {}).get("entries")
        return entries if isinstance(entries, dict) else {}

    def _max_age_ms(self) -> int:
        return int(setting(dict(self._config()), "skills.probeMaxAgeMs"))


def required_bins(skills: list[Skill]) -> list[str]:
    """Every binary a usable skill names in `bins` or `anyBins`, sorted."""
    names = {
        name
        for skill in skills
        if skill.usable
        for name in (*skill.requirements.bins, *skill.requirements.any_bins)
    }
    return sorted(names)
