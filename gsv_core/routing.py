"""Session keys: which session a message belongs to and which agent serves it.

Keys are plain strings. The routed shapes are

    agent:{agentId}:{mainKey}                                DM, dmScope "main" (default)
    agent:{agentId}:dm:{peerId}                              DM, "per-peer"
    agent:{agentId}:{channel}:dm:{peerId}                    DM, "per-channel-peer"
    agent:{agentId}:{channel}:{accountId}:dm:{peerId}        DM, "per-account-channel-peer"
    agent:{agentId}:{channel}:{kind}:{peerId}                group / channel / thread

plus the special keys built here for heartbeat and cron. Any other string is a valid key
too and is kept verbatim; `validate_session_key` refuses only garbage (empty, huge,
control characters, whitespace).

Everything is pure: settings arrive as a `RoutingSettings` built from the effective config.

Improvements over the original:
* identity links re-key DMs only; a linked member of a group no longer re-keys the group
  session to their own name;
* cron task runs get a fresh key per run when a run id is given (so runs share no history);
* the `dm` segment is found case-insensitively, and `is_main_session_key` takes the agent
  from the canonical key, so `main` counts as the main session of the default agent.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal
from typing import cast

from gsv_core.errors import InvalidParams

DEFAULT_AGENT_ID = "main"
DEFAULT_MAIN_KEY = "main"
DEFAULT_ACCOUNT_ID = "default"
# the CLI's default session; same value as localconfig.DEFAULT_SESSION_KEY,
# spelled again because routing sits below the settings layer
CLI_SESSION_KEY = "agent:main:cli:dm:main"
MAX_SESSION_KEY_LENGTH = 512

DmScope = Literal["main", "per-peer", "per-channel-peer", "per-account-channel-peer"]
DM_SCOPES: tuple[DmScope, ...] = (
    "main",
    "per-peer",
    "per-channel-peer",
    "per-account-channel-peer",
)

# ASCII only: with re.IGNORECASE a Unicode [a-z] would also match "K" (Kelvin) and "ſ"
_VALID_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.IGNORECASE | re.ASCII)
_INVALID_ID_CHARS = re.compile(r"[^a-z0-9_-]+")
_INVALID_TOKEN_CHARS = re.compile(r"[^a-z0-9+\-_@.]+")
_AGENT_PREFIX = "agent:"


# --------------------------------------------------------------------------- normalisation


def _normalise_id(raw: str | None, default: str) -> str:
    trimmed = (raw or "").strip()
    if not trimmed:
        return default
    if _VALID_ID.fullmatch(trimmed):
        return trimmed.lower()
    cleaned = _INVALID_ID_CHARS.sub("-", trimmed.lower()).strip("-")[:64]
    return cleaned or default


def normalise_agent_id(raw: str | None) -> str:
    """An agent id as keys spell it: lowercase `[a-z0-9_-]`, at most 64 chars, else `main`."""
    return _normalise_id(raw, DEFAULT_AGENT_ID)


def normalise_account_id(raw: str | None) -> str:
    """A channel account id, normalised like an agent id; empty means `default`."""
    return _normalise_id(raw, DEFAULT_ACCOUNT_ID)


def normalise_main_key(raw: str | None) -> str:
    """`session.mainKey`: trimmed and lowercased; empty means `main`."""
    return (raw or "").strip().lower() or DEFAULT_MAIN_KEY


def normalise_token(raw: str | None, fallback: str = "unknown") -> str:
    """A channel name, peer kind or peer id inside a key: lowercase, and every run of
    characters outside `[a-z0-9+-_@.]` becomes `_` (so `:` can never appear)."""
    trimmed = (raw or "").strip() or fallback
    return _INVALID_TOKEN_CHARS.sub("_", trimmed.lower())


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class AgentBinding:
    """`agents.bindings[]`: route channel traffic to an agent; absent fields match anything."""

    agent_id: str
    channel: str | None = None
    account_id: str | None = None
    peer_kind: str | None = None
    peer_id: str | None = None

    @classmethod
    def from_config(cls, raw: Any) -> AgentBinding | None:
        """The binding in a config entry, or None for an entry without an `agentId`."""
        if not isinstance(raw, Mapping) or not _text(raw.get("agentId")):
            return None
        match = raw.get("match")
        match = match if isinstance(match, Mapping) else {}
        peer = match.get("peer")
        peer = peer if isinstance(peer, Mapping) else {}
        return cls(
            agent_id=normalise_agent_id(raw["agentId"]),
            channel=_text(match.get("channel")),
            account_id=_text(match.get("accountId")),
            peer_kind=_text(peer.get("kind")),
            peer_id=_text(peer.get("id")),
        )

    def matches(self, channel: str, account_id: str | None, peer_kind: str, peer_id: str) -> bool:
        """Whether every field this binding sets equals the inbound value."""
        return (
            (self.channel is None or self.channel.lower() == channel.strip().lower())
            and (
                self.account_id is None
                or normalise_account_id(self.account_id) == normalise_account_id(account_id)
            )
            and (
                self.peer_kind is None
                or normalise_token(self.peer_kind) == normalise_token(peer_kind, fallback="dm")
            )
            and (self.peer_id is None or self.peer_id == peer_id.strip())
        )


def _text(value: Any) -> str | None:
    """A non-empty trimmed string, or None (empty config fields count as absent)."""
    if not isinstance(value, str):
        return None
    return value.strip() or None


@dataclass(frozen=True)
class RoutingSettings:
    """The config that shapes session keys; `from_config` reads it from the effective config."""

    main_key: str = DEFAULT_MAIN_KEY
    dm_scope: DmScope = "main"
    default_agent: str = DEFAULT_AGENT_ID
    identity_links: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    bindings: tuple[AgentBinding, ...] = ()

    def __post_init__(self) -> None:
        if self.dm_scope not in DM_SCOPES:
            raise InvalidParams(
                f"unknown session.dmScope {self.dm_scope!r}: use one of {', '.join(DM_SCOPES)}"
            )
        # frozen: normalise through object.__setattr__ so hand-built settings behave too
        object.__setattr__(self, "main_key", normalise_main_key(self.main_key))
        object.__setattr__(self, "default_agent", normalise_agent_id(self.default_agent))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RoutingSettings:
        """Settings from an effective-config dict; missing sections mean defaults."""
        session = _section(config, "session")
        agents = _section(config, "agents")
        bindings = (AgentBinding.from_config(raw) for raw in _list(agents.get("bindings")))
        return cls(
            main_key=str(session.get("mainKey") or DEFAULT_MAIN_KEY),
            dm_scope=cast(DmScope, session.get("dmScope") or "main"),
            default_agent=_default_agent(_list(agents.get("list"))),
            identity_links=_identity_links(session.get("identityLinks")),
            bindings=tuple(b for b in bindings if b is not None),
        )


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name)
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _default_agent(agent_list: list[Any]) -> str:
    for entry in agent_list:
        if isinstance(entry, Mapping) and entry.get("default") is True:
            return normalise_agent_id(entry.get("id"))
    return DEFAULT_AGENT_ID


def _identity_links(raw: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(name): tuple(i for i in identities if isinstance(i, str))
        for name, identities in raw.items()
        if isinstance(identities, list)
    }


# --------------------------------------------------------------------------- building


def build_session_key(
    agent_id: str | None,
    channel: str | None,
    account_id: str | None,
    peer_kind: str | None,
    peer_id: str | None,
    settings: RoutingSettings,
    linked_identity: str | None = None,
) -> str:
    """The session key for a peer on a channel. `linked_identity` (the canonical
    name from `resolve_linked_identity`) replaces the peer id of DMs only (never group ids)."""
    agent = normalise_agent_id(agent_id)
    kind = normalise_token(peer_kind, fallback="dm")
    chan = normalise_token(channel)
    if kind != "dm":
        return f"agent:{agent}:{chan}:{kind}:{normalise_token(peer_id)}"
    peer = normalise_token(linked_identity or peer_id)
    if settings.dm_scope == "per-peer":
        return f"agent:{agent}:dm:{peer}"
    if settings.dm_scope == "per-channel-peer":
        return f"agent:{agent}:{chan}:dm:{peer}"
    if settings.dm_scope == "per-account-channel-peer":
        return f"agent:{agent}:{chan}:{normalise_account_id(account_id)}:dm:{peer}"
    return f"agent:{agent}:{settings.main_key}"


def main_session_key(agent_id: str | None, settings: RoutingSettings) -> str:
    """The agent's main session: `agent:{agentId}:{mainKey}`."""
    return f"agent:{normalise_agent_id(agent_id)}:{settings.main_key}"


def heartbeat_session_key(agent_id: str | None) -> str:
    """The session heartbeats run in: `agent:{agentId}:heartbeat:system:internal`."""
    return f"agent:{normalise_agent_id(agent_id)}:heartbeat:system:internal"


def cron_session_key(agent_id: str | None, job_id: str, run_id: str | None = None) -> str:
    """The session of a cron task: `agent:{agentId}:cron:{jobId}`, or one fresh session per
    run, `agent:{agentId}:cron:{jobId}:{runId}`, when `run_id` is given, so runs share no history.

    The ids are normalised as tokens (never containing `:`, never exactly `dm`) so the key
    is already canonical and can never be mistaken for a DM key.
    """
    key = f"agent:{normalise_agent_id(agent_id)}:cron:{_cron_token(job_id)}"
    return f"{key}:{_cron_token(run_id)}" if run_id is not None else key


def _cron_token(raw: str | None) -> str:
    token = normalise_token(raw)
    # a `dm` segment followed by another would make the key parse as a DM
    return "_dm" if token == "dm" else token


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ParsedSessionKey:
    """A routed key taken apart; `channel` / `account_id` are None where the shape has none."""

    agent_id: str
    peer_kind: str
    peer_id: str
    channel: str | None = None
    account_id: str | None = None


def parse_session_key(key: str) -> ParsedSessionKey | None:
    """The parts of a routed key, or None for any other key (`main`, `agent:main:main`,
    `agent:x:cron:id`): the session key rules, with `dm` found case-insensitively."""
    if not key.startswith(_AGENT_PREFIX):
        return None
    parts = key.split(":")
    if len(parts) < 4:
        return None
    agent_id, rest = parts[1], parts[2:]
    # a `dm` that is the last segment is a peer id, not the marker
    for index, segment in enumerate(rest[:-1]):
        if segment.lower() == "dm":
            before = rest[:index]
            return ParsedSessionKey(
                agent_id=agent_id,
                peer_kind="dm",
                peer_id=":".join(rest[index + 1 :]),
                channel=before[0] if before else None,
                account_id=before[1] if len(before) > 1 else None,
            )
    if len(rest) >= 3:
        return ParsedSessionKey(
            agent_id=agent_id, channel=rest[0], peer_kind=rest[1], peer_id=":".join(rest[2:])
        )
    return None


def agent_id_of(key: str) -> str:
    """The agent a session belongs to: the raw 2nd segment of an `agent:` key, else `main`."""
    if key.startswith(_AGENT_PREFIX):
        return key.split(":")[1] or DEFAULT_AGENT_ID
    return DEFAULT_AGENT_ID


# --------------------------------------------------------------------------- canonicalisation


def canonicalize_session_key(key: str, settings: RoutingSettings) -> str:
    """The one spelling of a client-supplied key: `main` and the main key become the
    default agent's main session, routed keys are rebuilt with the current dmScope (so DMs
    collapse to the main session under dmScope `main`), anything else is kept verbatim."""
    key = key.strip()
    if not key:
        return ""
    if not key.startswith(_AGENT_PREFIX):
        if key.lower() in (DEFAULT_MAIN_KEY, settings.main_key):
            return main_session_key(settings.default_agent, settings)
        return key
    parsed = parse_session_key(key)
    if parsed is not None:
        return build_session_key(
            parsed.agent_id,
            parsed.channel,
            parsed.account_id,
            parsed.peer_kind,
            parsed.peer_id,
            settings,
        )
    parts = key.split(":")
    if len(parts) == 3 and parts[2].lower() in (DEFAULT_MAIN_KEY, settings.main_key):
        return main_session_key(parts[1], settings)
    return key


def cli_session_key(raw: str | None) -> str:
    """The key the CLI sends for `-s RAW`: empty or `main` mean the CLI's own DM session
    `agent:main:cli:dm:main`, which the gateway then canonicalises."""
    key = (raw or "").strip()
    return CLI_SESSION_KEY if key.lower() in ("", DEFAULT_MAIN_KEY) else key


def is_main_session_key(key: str, settings: RoutingSettings) -> bool:
    """Whether the key names its agent's main session (the one that sees MEMORY.md)."""
    canonical = canonicalize_session_key(key, settings)
    if not canonical:
        return False
    return canonical == f"agent:{agent_id_of(canonical)}:{settings.main_key}"


def validate_session_key(key: str) -> str:
    """The trimmed key, or InvalidParams for garbage: empty, longer than 512 characters, or
    holding whitespace or control characters (any other string is a valid key)."""
    trimmed = key.strip()
    if not trimmed:
        raise InvalidParams("sessionKey is empty")
    if len(trimmed) > MAX_SESSION_KEY_LENGTH:
        raise InvalidParams(
            f"sessionKey is {len(trimmed)} characters long; the limit is {MAX_SESSION_KEY_LENGTH}"
        )
    for char in trimmed:
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Cs"):
            raise InvalidParams(
                f"sessionKey {trimmed!r} contains whitespace or a control character "
                f"(U+{ord(char):04X})"
            )
    return trimmed


# --------------------------------------------------------------------------- identities


_E164_SUFFIX = re.compile(r"@(s\.whatsapp\.net|c\.us)$", re.IGNORECASE)
_DEVICE_SUFFIX = re.compile(r":[0-9]+$")
_NON_DIGITS = re.compile(r"[^0-9]+")
_CHANNEL_PREFIX = re.compile(r"([a-z][a-z0-9_-]*):(.+)", re.IGNORECASE | re.ASCII | re.DOTALL)


def normalize_e164(value: str | None) -> str:
    """A phone number in E.164 form: WhatsApp JID and device suffixes dropped,
    non-digits removed, `+` kept or added for 10+ digits; "" when no digits remain."""
    cleaned = _DEVICE_SUFFIX.sub("", _E164_SUFFIX.sub("", (value or "").strip()))
    digits = _NON_DIGITS.sub("", cleaned)
    if not digits:
        return ""
    return f"+{digits}" if cleaned.startswith("+") or len(digits) >= 10 else digits


def _same_identity(identity: str, sender_id: str) -> bool:
    """Equal as written, or as phone numbers (only when both have digits: two non-numeric
    ids both normalise to "" and must not match each other)."""
    if identity.strip().lower() == sender_id.strip().lower():
        return True
    phone = normalize_e164(identity)
    return bool(phone) and phone == normalize_e164(sender_id)


def _identity_matches(identity: str, channel: str, sender_id: str) -> bool:
    prefixed = _CHANNEL_PREFIX.fullmatch(identity.strip())
    # `whatsapp:+1555...` binds to one channel; a bare identity (or a JID with a device
    # suffix such as `1555...:3@s.whatsapp.net`, whose "prefix" is not a name) to any
    if prefixed is None:
        return _same_identity(identity, sender_id)
    identity_channel, value = prefixed.groups()
    return identity_channel.lower() == channel.strip().lower() and _same_identity(value, sender_id)


def resolve_linked_identity(
    channel: str, sender_id: str | None, settings: RoutingSettings
) -> str | None:
    """The canonical name `session.identityLinks` gives this sender, or None.
    Callers use it for DMs only: `build_session_key` ignores it for other peer kinds."""
    if not sender_id or not sender_id.strip():
        return None
    for name, identities in settings.identity_links.items():
        if any(_identity_matches(identity, channel, sender_id) for identity in identities):
            return name
    return None


# --------------------------------------------------------------------------- agents


def resolve_agent_id(
    channel: str,
    account_id: str | None,
    peer_kind: str,
    peer_id: str,
    settings: RoutingSettings,
) -> str:
    """The agent serving channel traffic: the first binding whose set fields all equal the
    inbound values, else the default agent."""
    for binding in settings.bindings:
        if binding.matches(channel, account_id, peer_kind, peer_id):
            return binding.agent_id
    return settings.default_agent


@dataclass(frozen=True)
class InboundRoute:
    agent_id: str
    session_key: str


def route_inbound(
    channel: str,
    account_id: str | None,
    peer_kind: str,
    peer_id: str,
    settings: RoutingSettings,
    sender_id: str | None = None,
) -> InboundRoute:
    """Agent and session key for a channel message: bindings pick the
    agent; identity links, looked up by sender (or peer) id, apply to DMs only."""
    agent_id = resolve_agent_id(channel, account_id, peer_kind, peer_id, settings)
    linked = None
    if normalise_token(peer_kind, fallback="dm") == "dm":
        linked = resolve_linked_identity(channel, sender_id or peer_id, settings)
    key = build_session_key(agent_id, channel, account_id, peer_kind, peer_id, settings, linked)
    return InboundRoute(agent_id=agent_id, session_key=key)
