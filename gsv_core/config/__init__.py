"""The gateway configuration: schema with defaults, dotted get/set, validation, masking.

Only overrides are stored; the effective config is `deep_merge(DEFAULTS,
overrides)`: objects merge, arrays and scalars replace. Everything here is pure: the
gateway's config handler loads and saves overrides through a store.

Improvements over the original:
* every value is validated against `GsvConfig` (strict types, unknown keys refused) and a
  failure names the field;
* `set_override(path, None)` removes the override, restoring the default;
* secrets are masked as "***" in every read, whole or by path.
"""

from __future__ import annotations

import copy
import ipaddress
import re
from typing import Annotated
from typing import Any
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic import field_validator

from gsv_core.config.explain import explain
from gsv_core.config.explain import field_of
from gsv_core.config.mask import keep_masked
from gsv_core.config.mcp import McpConfig
from gsv_core.config.model_refs import check_fallbacks
from gsv_core.config.tree import deep_merge
from gsv_core.config.tree import get_path
from gsv_core.config.tree import put_path
from gsv_core.config.tree import remove_path
from gsv_core.config.tree import split_path
from gsv_core.errors import InvalidParams


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _OpenSection(BaseModel):
    """A section whose extra keys are allowed (per-channel or per-provider settings)."""

    model_config = ConfigDict(extra="allow", strict=True)


class ModelConfig(_Section):
    provider: str = "anthropic"
    id: str = "claude-sonnet-4-20250514"
    # tokens; unset: known per model family (gsv_core.agent.compaction.KNOWN_WINDOWS)
    contextWindow: int | None = Field(default=None, ge=1024)
    # the model channel voice notes are transcribed with (OpenAI-compatible endpoints)
    transcriptionModel: str | None = None
    # tried in order when the model cannot answer (docs/models.md#fallbacks)
    fallbacks: list[dict[str, str]] | None = None

    @field_validator("fallbacks", mode="before")
    @classmethod
    def _fallbacks(cls, value: Any) -> list[dict[str, str]] | None:
        return None if value is None else check_fallbacks(value, "model.fallbacks")


class ApiKeysConfig(_OpenSection):
    """A key, or a pool of keys tried in turn (docs/models.md#key-pools)."""

    anthropic: str | list[str] | None = None
    openai: str | list[str] | None = None
    google: str | list[str] | None = None
    openrouter: str | list[str] | None = None


class TimeoutsConfig(_Section):
    llmMs: int = Field(default=300_000, ge=1000)
    toolMs: int = Field(default=60_000, ge=1000)


class AuthConfig(_Section):
    token: str | None = None


def _origin(value: str) -> str:
    """`https://host[:port]` exactly as a browser sends it in `Origin` (no path, no slash)."""
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or value.rstrip("/") != (f"{parts.scheme}://{parts.netloc}")
    ):
        raise ValueError(f"{value!r} is not an origin like https://chat.example.com")
    return value.rstrip("/")


class GatewaySection(_Section):
    # browser pages allowed to open /ws; native clients send no Origin.
    # Read when the gateway starts: restart it to apply a change.
    allowedOrigins: list[Annotated[str, AfterValidator(_origin)]] = Field(default_factory=list)


class TranscriptionConfig(_Section):
    provider: str = "openai"


class ChannelGroupsConfig(_OpenSection):
    # group messages wake the agent only when it is mentioned or replied to, not on every message
    requireMention: bool = True


class ChannelConfig(_OpenSection):
    """Per channel (adapter-specific keys such as botToken are allowed besides these)."""

    dmPolicy: Literal["open", "allowlist", "pairing"] = "pairing"
    allowFrom: list[str] = Field(default_factory=list)
    groups: ChannelGroupsConfig = Field(default_factory=ChannelGroupsConfig)
    # messages per minute sent to one account of this channel (platforms throttle bots)
    sendRatePerMinute: int = Field(default=30, ge=1, le=10_000)
    # let the platform fetch the links in the agent's messages to show previews: off, as
    # a fetched link can carry what an injected prompt put in it (docs/channels.md)
    linkPreviews: bool = False


class PairingConfig(_Section):
    ttlHours: int = Field(default=72, ge=1, le=24 * 365)


class ResetPolicyConfig(_Section):
    mode: Literal["manual", "daily", "idle"] = "daily"
    atHour: int | None = Field(default=4, ge=0, le=23)
    idleMinutes: int | None = Field(default=None, ge=0)


class SessionConfig(_Section):
    defaultResetPolicy: ResetPolicyConfig = Field(default_factory=ResetPolicyConfig)
    mainKey: str = Field(default="main", min_length=1)
    dmScope: Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"] = "main"
    identityLinks: dict[str, list[str]] = Field(default_factory=dict)
    # days a cron task run's or a sub-agent's session is kept once nobody touches it
    oneOffRetentionDays: int = Field(default=30, ge=1, le=3650)


class SkillRequirementsConfig(_Section):
    """Requirement overrides of one skill; a list given here replaces the SKILL.md one."""

    bins: list[str] | None = None
    anyBins: list[str] | None = None
    env: list[str] | None = None
    os: list[str] | None = None
    capabilities: list[str] | None = None


class SkillEntryConfig(_Section):
    """`skills.entries.<name>`: hide a skill, force it always on, or change what it needs."""

    enabled: bool = True
    always: bool | None = None
    requires: SkillRequirementsConfig | None = None


class SkillsConfig(_Section):
    entries: dict[str, SkillEntryConfig] = Field(default_factory=dict)
    # node bin probes are trusted this long before they are asked again
    probeMaxAgeMs: int = Field(default=600_000, ge=1000, le=86_400_000)


class ToolApprovalConfig(_Section):
    """Approval policy (gsv_core.approval.policy; the model: docs/approvals.md)."""

    # allowlist: only known read-only shell commands run unasked; denylist: the older,
    # weaker list of dangerous programs; off: nothing asks (secrets stay protected)
    mode: Literal["allowlist", "denylist", "off"] = "allowlist"
    defaultDecision: Literal["allow", "ask", "deny"] = "allow"
    rules: list[dict[str, Any]] = Field(default_factory=list)
    # "standard": writes outside the workspace ask (and in denylist mode, the list of
    # dangerous programs)
    preset: Literal["standard", "none"] = "standard"
    # the owner's "always allow" rules: a program and its subcommand or script
    allow: list[str] = Field(default_factory=list)
    # an unanswered approval expires closed after this long; timeoutMs wins when set
    timeoutMs: int | None = Field(default=None, ge=1000, le=86_400_000)
    timeoutSeconds: int = Field(default=300, ge=1, le=86_400)
    # longer shell lines ask ("too long to read") without being read
    maxCommandBytes: int = Field(default=65_536, ge=1024, le=16 * 1024 * 1024)
    # on a node with an OS sandbox, auto: a command that would ask only because it writes
    # in the workspace or runs a local program runs unasked, confined (docs/sandbox.md);
    # ask: it asks as on a node without one
    sandboxed: Literal["auto", "ask"] = "auto"

    @field_validator("allow")
    @classmethod
    def _rules(cls, value: list[str]) -> list[str]:
        """Refused when set: a rule the policy would have to skip protects nothing."""
        for rule in value:
            words = rule.split()
            too_many = len(words) > MAX_RULE_WORDS
            if not words or too_many or not all(RULE_WORD.fullmatch(w) for w in words):
                raise ValueError(
                    f"cannot read {rule!r} as a rule: give a program and its subcommand or "
                    "script (git commit, npm test, python3 job.py), plain words only"
                )
        return [" ".join(rule.split()) for rule in value]


# a word of an "always allow" rule: nothing the shell would interpret (gsv_core.approval.always)
RULE_WORD = re.compile(r"[A-Za-z0-9_./:@%+,=~-]+")
MAX_RULE_WORDS = 8


# a heartbeat interval as gsv_core.heartbeat.duration reads it
_INTERVAL = re.compile(r"|0|off|none|disabled|(?:\d+\s*[smhd]\s*)+")


class ActiveHoursConfig(_Section):
    start: str = Field(default="08:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    end: str = Field(default="23:00", pattern=r"^([01]\d|2[0-4]):[0-5]\d$")
    timezone: str | None = None


class HeartbeatConfig(_Section):
    every: str = "30m"
    prompt: str = (
        "Read HEARTBEAT.md if it exists in your workspace. Follow it strictly. "
        "Do not infer or repeat old tasks from prior chats. "
        "If nothing needs attention, reply HEARTBEAT_OK."
    )
    target: str = "last"
    activeHours: ActiveHoursConfig = Field(default_factory=ActiveHoursConfig)

    @field_validator("every")
    @classmethod
    def _interval(cls, value: str) -> str:
        """Refused when set, not found wrong at the next beat (gsv_core.heartbeat reads it)."""
        if not _INTERVAL.fullmatch(value.strip().lower()):
            raise ValueError(
                f"cannot read {value!r} as an interval; use a number with a unit (45s, 30m, "
                "2h, 1d, or a sum like 1h30m), or 0 / off to switch heartbeats off"
            )
        return value


class AgentsConfig(_Section):
    # `list` is the wire name; a field cannot be called that without shadowing the type
    agent_list: list[dict[str, Any]] = Field(default_factory=list, alias="list")
    bindings: list[dict[str, Any]] = Field(default_factory=list)
    defaultHeartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig)
    # sub-agents (gsv__Spawn) running at once across the gateway; more wait their turn
    maxConcurrentSpawns: int = Field(default=4, ge=1, le=64)

    @field_validator("agent_list")
    @classmethod
    def _agent_fallbacks(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, entry in enumerate(value):
            if "fallbacks" in entry:
                check_fallbacks(entry["fallbacks"], f"agents.list[{index}].fallbacks")
        return value


class CompactionConfig(_Section):
    enabled: bool = True
    reserveTokens: int = Field(default=20_000, ge=0)
    keepRecentTokens: int = Field(default=20_000, ge=0)
    extractMemories: bool = True


class AgentConfig(_Section):
    # deprecated: the old name of maxToolSteps, read in its place while set and the new
    # name is not (RENAMED);
    # first, so a bad value set under this name is reported under it
    maxIterations: int | None = Field(default=None, ge=1, le=1000)
    # a run ends with a clear error after this many steps that call tools, never loops on
    maxToolSteps: int = Field(default=50, ge=1, le=1000)


class ProviderConfig(_Section):
    """An LLM endpoint: `api` picks the SDK (openai-compatible or anthropic)."""

    api: Literal["openai", "anthropic"] = "openai"
    baseUrl: str | None = None
    # secret (masked), or a pool of keys; apiKeys.<name> works as well
    apiKey: str | list[str] | None = None
    contextWindow: int | None = Field(default=None, ge=1024)
    # send OpenAI's `prompt_cache_key` (one per session) so a conversation's requests
    # meet the same cache; unset: only to api.openai.com (other servers may refuse it)
    promptCacheKey: bool | None = None
    # how its models get tools (gsv_core/providers/tool_call_modes.py): native, as JSON
    # text described in the system prompt (small local models), or none at all
    toolCalls: Literal["native", "text", "off"] = "native"


class CronConfig(_Section):
    enabled: bool = True
    maxJobs: int = Field(default=200, ge=1)
    maxRunsPerJobHistory: int = Field(default=200, ge=1)
    maxConcurrentRuns: int = Field(default=4, ge=1)
    # jobs that fell due while the gateway was down wait this long for the nodes that were
    # connected before to come back (their tools would fail without them)
    catchUpGraceMs: int = Field(default=60_000, ge=0, le=3_600_000)


class PriceConfig(_Section):
    """USD per million tokens of one model (gsv_core/usage/prices.py)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cacheRead: float | None = Field(default=None, ge=0)  # unset: as input
    cacheWrite: float | None = Field(default=None, ge=0)


class BudgetConfig(_Section):
    """Spending caps in USD (gsv_core/usage/budget.py). daily and monthly stop every run
    once reached; background (cron, heartbeat and what they start) is per day and on by
    default, so nothing spends unwatched overnight. `false` turns one off."""

    daily: Annotated[float, Field(ge=0)] | Literal[False] | None = None
    monthly: Annotated[float, Field(ge=0)] | Literal[False] | None = None
    background: Annotated[float, Field(ge=0)] | Literal[False] | None = 1.0


class WebFetchConfig(_Section):
    """gsv__WebFetch (gsv_core/webfetch): what it may reach and how much it reads."""

    # networks a fetch may reach although they are not public, e.g. ["192.168.1.0/24"]
    allowPrivate: list[str] = Field(default_factory=list)
    maxBytes: int = Field(default=1_000_000, ge=1, le=10 * 1024 * 1024)
    timeoutMs: int = Field(default=20_000, ge=1000, le=300_000)

    @field_validator("allowPrivate")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            ipaddress.ip_network(entry, strict=False)  # ValueError names the bad entry
        return entries


class ToolsConfig(_Section):
    # more tool schemas than this in one request: the rest are found with gsv__ToolSearch
    # (gsv_core/gateway/tool_search.py)
    inlineLimit: int = Field(default=40, ge=1, le=1000)


class EmbeddingsConfig(_Section):
    """An OpenAI-compatible embeddings endpoint for semantic ranking (docs/memory.md)."""

    baseUrl: str = Field(min_length=1, max_length=2000, pattern=r"^https?://")  # up to /v1
    model: str = Field(min_length=1, max_length=200)
    apiKey: str | None = None  # secret (masked)


class MemoryConfig(_Section):
    """The memory index (gsv_core/memory, docs/memory.md)."""

    # when set, pieces are embedded in the background and searches fuse BM25 with meaning
    embeddings: EmbeddingsConfig | None = None

    # more notes than MEMORY.md, USER.md and memory/**/*.md: paths or glob patterns
    # relative to each agent's folder, e.g. ["journal/*.txt", "TODO.md"]
    notes: list[str] = Field(default_factory=list, max_length=100)

    @field_validator("notes")
    @classmethod
    def _inside(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            parts = entry.split("/")
            if not entry.strip() or entry.startswith(("/", "~")) or "\\" in entry or ".." in parts:
                raise ValueError(
                    f"{entry!r} is not a path inside the agent's folder: give one relative "
                    'to it, e.g. "journal/*.md"'
                )
        return entries


class UsageConfig(_Section):
    # the ledger of model calls keeps this many days (gsv usage, usage.get)
    retentionDays: int = Field(default=400, ge=1, le=3650)


class ChannelsConfig(_OpenSection):
    """`channels`: one object per channel (its key is the channel's name), beside the
    settings of every channel's delivery."""

    __pydantic_extra__: dict[str, ChannelConfig] = Field(init=False)
    # a reply that cannot be delivered is kept and retried this long, then dropped
    # (gsv_core.channels.reply_queue)
    outboxMaxAgeHours: int = Field(default=24, ge=1, le=24 * 30)
    # an answered or dropped inbound message is remembered this long, so that the same
    # message delivered again is known as a duplicate (gsv_core.channels.inbox)
    journalRetentionDays: int = Field(default=30, ge=1, le=3650)


def _default_channels() -> ChannelsConfig:
    # every channel defaults to pairing: a stranger never reaches the agent unasked. The
    # in-process adapters are listed so that their settings show with their defaults.
    adapters = ("whatsapp", "discord", "telegram", "slack")
    return ChannelsConfig.model_validate({name: {"dmPolicy": "pairing"} for name in adapters})


class GsvConfig(_Section):
    """The whole gateway config with its defaults."""

    model: ModelConfig = Field(default_factory=ModelConfig)
    apiKeys: ApiKeysConfig = Field(default_factory=ApiKeysConfig)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    gateway: GatewaySection = Field(default_factory=GatewaySection)
    transcription: TranscriptionConfig = Field(default_factory=TranscriptionConfig)
    channels: ChannelsConfig = Field(default_factory=_default_channels)
    systemPrompt: str | None = None
    session: SessionConfig = Field(default_factory=SessionConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    toolApproval: ToolApprovalConfig = Field(default_factory=ToolApprovalConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    cron: CronConfig = Field(default_factory=CronConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    pairing: PairingConfig = Field(default_factory=PairingConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    pricing: dict[str, PriceConfig] = Field(default_factory=dict)
    usage: UsageConfig = Field(default_factory=UsageConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    webFetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    userTimezone: str = "UTC"


DEFAULTS: dict[str, Any] = GsvConfig().model_dump(mode="json", exclude_none=True, by_alias=True)
# deprecated name -> current name. A stored override under the old name still works: the
# effective config shows its value under the new name too, and setting the new name drops
# the old one (else the old one would keep winning).
RENAMED = {"agent.maxIterations": "agent.maxToolSteps"}


def setting(config: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of `config`, or the default `GsvConfig` holds for it
    when `config` lacks it (a partial config, such as one a test host builds). None when
    neither has it (an optional setting left unset)."""
    found, value = get_path(config, path)
    return value if found else get_path(DEFAULTS, path)[1]


def set_override(overrides: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A new overrides tree with `value` at `path`; `None` removes the override so the
    default shows through again. Intermediate non-objects are replaced by objects.
    Setting a renamed key's new name drops its old one (RENAMED). A value read masked and
    written back unchanged keeps what it masks (`keep_masked`)."""
    segments = split_path(path)
    found, current = get_path(overrides, path)
    if found:
        value = keep_masked(value, current, tuple(segments))
    result = copy.deepcopy(overrides)
    for old, new in RENAMED.items():
        if path == new:
            remove_path(result, split_path(old))
    if value is None:
        remove_path(result, segments)
    else:
        put_path(result, segments, value)
    return result


def effective_config(overrides: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = deep_merge(DEFAULTS, overrides)
    for old, new in RENAMED.items():
        found, value = get_path(overrides, old)
        if get_path(overrides, new)[0]:  # the new name, once set, wins however it was set
            continue
        if found and value is not None:  # the old name stays too: validated like any key
            result = copy.deepcopy(result)  # merged parts may be DEFAULTS' own objects
            put_path(result, split_path(new), value)
    return result


def validate_config(config: dict[str, Any]) -> GsvConfig:
    """Validate an effective config; InvalidParams names the first bad key, what it
    expects and an example (gsv_core/config/explain.py)."""
    try:
        return GsvConfig.model_validate(config)
    except ValidationError as exc:
        errors = exc.errors()
        field, message = explain(errors, GsvConfig)
        problems = [{"field": field_of(err), "message": str(err["msg"])} for err in errors]
        raise InvalidParams(
            f"invalid config value for {field}: {message}", details={"errors": problems}
        ) from None


def agent_entry(config: dict[str, Any], agent_id: str) -> dict[str, Any]:
    """The `agents.list` entry of `agent_id` ({} when it has none): its own `model` and
    `systemPrompt` apply below a session's settings, above the global ones."""
    listed = (config.get("agents") or {}).get("list") or []
    for entry in listed:
        if isinstance(entry, dict) and entry.get("id") == agent_id:
            return entry
    return {}


def agent_model(config: dict[str, Any], agent_id: str) -> tuple[str, str] | None:
    """An agent's own model: `{"provider", "id"}` or `"provider/id"`; None when unset."""
    model = agent_entry(config, agent_id).get("model")
    if isinstance(model, dict) and model.get("provider") and model.get("id"):
        return str(model["provider"]), str(model["id"])
    if isinstance(model, str) and "/" in model:
        provider, _, model_id = model.partition("/")
        return (provider, model_id) if provider and model_id else None
    return None
