"""`skills.status` / `skills.update` params and results (docs/protocol.md#methods)."""

from __future__ import annotations

from pydantic import Field

from gsv_core.protocol.schemas import WireModel

# probe timeouts are clamped to 1-120 s, 15 s by default, as the original did
# (docs/protocol.md#skills)
DEFAULT_PROBE_TIMEOUT_MS = 15_000
MAX_PROBE_TIMEOUT_MS = 120_000


class SkillsStatusParams(WireModel):
    agentId: str | None = Field(default=None, min_length=1)


class SkillsUpdateParams(WireModel):
    agentId: str | None = Field(default=None, min_length=1)
    force: bool = False
    timeoutMs: int = Field(default=DEFAULT_PROBE_TIMEOUT_MS, ge=1000, le=MAX_PROBE_TIMEOUT_MS)


class SkillRequirementSnapshot(WireModel):
    bins: list[str] = Field(default_factory=list)
    anyBins: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    os: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)


class SkillNodeStatus(WireModel):
    nodeId: str
    hostRole: str = "execution"
    hostCapabilities: list[str] = Field(default_factory=list)
    hostOs: str | None = None
    hostEnv: list[str] = Field(default_factory=list)
    hostBins: list[str] = Field(default_factory=list)  # binaries found by probes
    hostBinStatusUpdatedAt: int | None = None
    canProbeBins: bool = False


class SkillStatusEntry(WireModel):
    name: str
    description: str
    location: str
    always: bool
    eligible: bool
    eligibleHosts: list[str]
    reasons: list[str]
    requirements: SkillRequirementSnapshot


class SkillsStatusResult(WireModel):
    agentId: str
    refreshedAt: int
    requiredBins: list[str]
    nodes: list[SkillNodeStatus]
    skills: list[SkillStatusEntry]


class SkillsUpdateResult(SkillsStatusResult):
    updatedNodeCount: int
    skippedNodeIds: list[str]
    errors: list[str]
