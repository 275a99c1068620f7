"""Session-key routing: tables ported from the original's routing.test and
config.test, plus the DM-only identity-link fix, bindings and key validation."""

from __future__ import annotations

import re

import pytest

from gsv_core.config import DEFAULTS
from gsv_core.config.tree import deep_merge
from gsv_core.errors import InvalidParams
from gsv_core.routing import CLI_SESSION_KEY
from gsv_core.routing import AgentBinding
from gsv_core.routing import InboundRoute
from gsv_core.routing import ParsedSessionKey
from gsv_core.routing import RoutingSettings
from gsv_core.routing import agent_id_of
from gsv_core.routing import build_session_key
from gsv_core.routing import canonicalize_session_key
from gsv_core.routing import cli_session_key
from gsv_core.routing import cron_session_key
from gsv_core.routing import heartbeat_session_key
from gsv_core.routing import is_main_session_key
from gsv_core.routing import main_session_key
from gsv_core.routing import normalise_account_id
from gsv_core.routing import normalise_agent_id
from gsv_core.routing import normalise_main_key
from gsv_core.routing import normalise_token
from gsv_core.routing import normalize_e164
from gsv_core.routing import parse_session_key
from gsv_core.routing import resolve_agent_id
from gsv_core.routing import resolve_linked_identity
from gsv_core.routing import route_inbound
from gsv_core.routing import validate_session_key

MAIN = RoutingSettings()
PER_PEER = RoutingSettings(dm_scope="per-peer")
PER_CHANNEL_PEER = RoutingSettings(dm_scope="per-channel-peer")
PER_ACCOUNT = RoutingSettings(dm_scope="per-account-channel-peer")
PRIMARY = RoutingSettings(main_key="primary")


# --------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Ops", "ops"),
        ("  ops  ", "ops"),
        ("", "main"),
        ("   ", "main"),
        (None, "main"),
        ("my_agent-2", "my_agent-2"),
        ("My Agent!", "my-agent"),
        ("--weird**name--", "weird-name"),
        ("***", "main"),
        ("a" * 70, "a" * 64),
        ("_lead", "_lead"),
        ("\u212aelvin", "kelvin"),  # Kelvin sign: not ASCII, but lowercases to "k"
        ("é-agent", "agent"),
    ],
)
def test_agent_ids_are_normalised(raw: str | None, expected: str) -> None:
    """Agent ids are trimmed, lowercased, invalid runs become '-', and empty means main."""
    assert normalise_agent_id(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", "default"), (None, "default"), ("Phone-1", "phone-1"), ("my phone", "my-phone")],
)
def test_account_ids_are_normalised_with_default(raw: str | None, expected: str) -> None:
    """Account ids follow the agent-id rules with `default` as the empty value."""
    assert normalise_account_id(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"), [(" Primary ", "primary"), ("", "main"), (None, "main"), ("MAIN", "main")]
)
def test_main_key_is_trimmed_and_lowercased(raw: str | None, expected: str) -> None:
    """session.mainKey is trimmed and lowercased; empty means main."""
    assert normalise_main_key(raw) == expected


@pytest.mark.parametrize(
    ("raw", "fallback", "expected"),
    [
        ("WhatsApp", "unknown", "whatsapp"),
        ("+1 555 123", "unknown", "+1_555_123"),
        ("a:b", "unknown", "a_b"),
        ("user@example.com", "unknown", "user@example.com"),
        ("x!!y", "unknown", "x_y"),
        ("", "unknown", "unknown"),
        ("  ", "dm", "dm"),
        (None, "dm", "dm"),
    ],
)
def test_tokens_are_normalised(raw: str | None, fallback: str, expected: str) -> None:
    """Tokens are lowercased, runs outside [a-z0-9+-_@.] become '_', empty takes the fallback."""
    assert normalise_token(raw, fallback) == expected


# --------------------------------------------------------------------------- 17.3 routing.test


def test_main_session_key_normalises_agent_and_main_key() -> None:
    """resolveAgentMainSessionKey({Ops, Primary}) is agent:ops:primary."""
    assert main_session_key("Ops", RoutingSettings(main_key="Primary")) == "agent:ops:primary"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("agent:ops:main", "ops"),
        ("agent:Ops:whatsapp:dm:+1", "Ops"),
        ("main", "main"),
        ("custom:thing", "main"),
        ("", "main"),
    ],
)
def test_agent_id_is_second_segment_with_main_fallback(key: str, expected: str) -> None:
    """The agent of a key is its raw 2nd segment for agent: keys, else main."""
    assert agent_id_of(key) == expected


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            "agent:main:whatsapp:dm:+12345",
            ParsedSessionKey("main", "dm", "+12345", channel="whatsapp"),
        ),
        ("agent:main:dm:+12345", ParsedSessionKey("main", "dm", "+12345")),
        (
            "agent:main:whatsapp:phone-1:dm:+12345",
            ParsedSessionKey("main", "dm", "+12345", channel="whatsapp", account_id="phone-1"),
        ),
        (
            "agent:main:discord:group:123456",
            ParsedSessionKey("main", "group", "123456", channel="discord"),
        ),
        (
            "agent:main:discord:thread:1:2",
            ParsedSessionKey("main", "thread", "1:2", channel="discord"),
        ),
        ("agent:main:wa:dm:a:b", ParsedSessionKey("main", "dm", "a:b", channel="wa")),
        ("agent:main:cli:DM:main", ParsedSessionKey("main", "dm", "main", channel="cli")),
        # a trailing `dm` is a peer id, not the marker
        ("agent:main:slack:user:dm", ParsedSessionKey("main", "user", "dm", channel="slack")),
    ],
)
def test_routed_keys_parse_into_their_parts(key: str, expected: ParsedSessionKey) -> None:
    """Per-peer, per-channel-peer, per-account-channel-peer DM keys and group keys parse."""
    assert parse_session_key(key) == expected


@pytest.mark.parametrize(
    "key",
    ["main", "agent:main:main", "agent:ops:primary", "agent:x:cron:job-1", "agent:main:x:dm", ""],
)
def test_unrouted_keys_do_not_parse(key: str) -> None:
    """Main keys, 3-part aliases, cron keys and short keys parse to None."""
    assert parse_session_key(key) is None


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (MAIN, "agent:main:main"),
        (PRIMARY, "agent:main:primary"),
        (PER_PEER, "agent:main:dm:+12345"),
        (PER_CHANNEL_PEER, "agent:main:whatsapp:dm:+12345"),
        (PER_ACCOUNT, "agent:main:whatsapp:phone-1:dm:+12345"),
    ],
)
def test_dm_keys_follow_dm_scope(settings: RoutingSettings, expected: str) -> None:
    """A DM key has the shape its dmScope asks for."""
    key = build_session_key("main", "whatsapp", "phone-1", "dm", "+12345", settings)
    assert key == expected


def test_non_dm_keys_ignore_dm_scope() -> None:
    """Group, channel and thread keys are agent:{a}:{channel}:{kind}:{peer} under any scope."""
    for settings in (MAIN, PER_PEER, PER_CHANNEL_PEER, PER_ACCOUNT):
        key = build_session_key("Ops", "Discord", "acc", "group", "G 1", settings)
        assert key == "agent:ops:discord:group:g_1"


def test_build_fills_missing_parts_with_fallbacks() -> None:
    """Missing channel, account and peer become unknown/default; a missing kind means DM."""
    assert (
        build_session_key(None, None, None, None, None, PER_ACCOUNT)
        == "agent:main:unknown:default:dm:unknown"
    )


@pytest.mark.parametrize(
    ("key", "settings", "expected"),
    [
        ("main", PRIMARY, "agent:main:primary"),
        ("MAIN", MAIN, "agent:main:main"),
        ("primary", PRIMARY, "agent:main:primary"),
        ("agent:main:main", PRIMARY, "agent:main:primary"),
        ("agent:main:primary", PRIMARY, "agent:main:primary"),
        ("agent:Ops:Main", MAIN, "agent:ops:main"),
        ("agent:main:cli:dm:main", MAIN, "agent:main:main"),
        ("agent:main:whatsapp:dm:+12345", MAIN, "agent:main:main"),
        ("agent:main:dm:+12345", MAIN, "agent:main:main"),
        ("agent:main:whatsapp:phone-1:dm:+12345", MAIN, "agent:main:main"),
        ("agent:main:whatsapp:dm:+12345", PER_CHANNEL_PEER, "agent:main:whatsapp:dm:+12345"),
        ("agent:main:whatsapp:phone-1:dm:+1", PER_CHANNEL_PEER, "agent:main:whatsapp:dm:+1"),
        ("agent:main:whatsapp:dm:+1", PER_ACCOUNT, "agent:main:whatsapp:default:dm:+1"),
        ("agent:Main:WhatsApp:DM:ABC", PER_PEER, "agent:main:dm:abc"),
        ("agent:main:discord:group:123", MAIN, "agent:main:discord:group:123"),
        ("agent:main:heartbeat:system:internal", MAIN, "agent:main:heartbeat:system:internal"),
        ("agent:x:cron:job-1", MAIN, "agent:x:cron:job-1"),
        ("agent:ops:primary", MAIN, "agent:ops:primary"),
        ("my-session", MAIN, "my-session"),
        ("Some Label", MAIN, "Some Label"),
        ("  agent:main:main  ", MAIN, "agent:main:main"),
        ("", MAIN, ""),
        ("   ", MAIN, ""),
    ],
)
def test_keys_canonicalise(key: str, settings: RoutingSettings, expected: str) -> None:
    """Aliases map to the main key, DM keys follow dmScope, other keys stay as they are."""
    assert canonicalize_session_key(key, settings) == expected


def test_main_alias_uses_the_configured_default_agent() -> None:
    """`main` canonicalises to the main session of the default agent."""
    settings = RoutingSettings(default_agent="Ops", main_key="home")
    assert canonicalize_session_key("main", settings) == "agent:ops:home"
    assert canonicalize_session_key("home", settings) == "agent:ops:home"


def test_canonical_keys_are_fixed_points() -> None:
    """Canonicalising a canonical key changes nothing."""
    for settings in (MAIN, PER_PEER, PER_CHANNEL_PEER, PER_ACCOUNT, PRIMARY):
        key = build_session_key("Ops", "WhatsApp", "Phone 1", "dm", "+1 555", settings)
        assert canonicalize_session_key(key, settings) == key


@pytest.mark.parametrize(
    ("key", "settings", "expected"),
    [
        ("agent:main:main", MAIN, True),
        ("main", MAIN, True),
        ("", MAIN, False),
        ("agent:main:cli:dm:main", MAIN, True),
        ("agent:main:whatsapp:dm:+12345", MAIN, True),
        ("agent:ops:main", MAIN, True),
        ("agent:main:whatsapp:dm:+12345", PER_CHANNEL_PEER, False),
        ("agent:main:discord:group:1", MAIN, False),
        ("agent:main:main", PRIMARY, True),
        ("agent:ops:primary", MAIN, False),
        ("my-session", MAIN, False),
    ],
)
def test_main_session_detection(key: str, settings: RoutingSettings, expected: bool) -> None:
    """Canonical main keys and DMs collapsed under dmScope main are main sessions."""
    assert is_main_session_key(key, settings) is expected


def test_main_alias_is_main_session_of_a_non_default_agent() -> None:
    """`main` is the main session even when the default agent is not called main."""
    assert is_main_session_key("main", RoutingSettings(default_agent="ops"))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", CLI_SESSION_KEY),
        (None, CLI_SESSION_KEY),
        ("main", CLI_SESSION_KEY),
        (" Main ", CLI_SESSION_KEY),
        ("agent:main:cli:dm:work", "agent:main:cli:dm:work"),
        ("  custom ", "custom"),
    ],
)
def test_cli_session_key_defaults(raw: str | None, expected: str) -> None:
    """The CLI maps empty and main to agent:main:cli:dm:main and keeps other keys."""
    assert cli_session_key(raw) == expected


def test_cli_default_canonicalises_to_main_session() -> None:
    """The CLI default key lands on agent:main:main under dmScope main."""
    assert canonicalize_session_key(cli_session_key(""), MAIN) == "agent:main:main"


# --------------------------------------------------------------------------- special keys


def test_heartbeat_key_shape() -> None:
    """Heartbeats run in agent:{id}:heartbeat:system:internal, already canonical."""
    key = heartbeat_session_key("Ops")
    assert key == "agent:ops:heartbeat:system:internal"
    assert canonicalize_session_key(key, MAIN) == key


def test_cron_keys_per_job_and_per_run() -> None:
    """Cron tasks use agent:{id}:cron:{job}, or a fresh key per run when a run id is given."""
    job = "0b6e1c1e-6f0a-4b7e-9d0a-3f1c2b4a5d6e"
    assert cron_session_key("main", job) == f"agent:main:cron:{job}"
    first = cron_session_key("main", job, "run-1")
    second = cron_session_key("main", job, "run-2")
    assert first == f"agent:main:cron:{job}:run-1"
    assert first != second
    for key in (cron_session_key("main", job), first):
        assert canonicalize_session_key(key, MAIN) == key


def test_cron_key_never_reads_as_a_dm() -> None:
    """A job or run id spelled `dm` cannot turn a cron key into a DM key that collapses."""
    key = cron_session_key("main", "DM", "x:y")
    assert key == "agent:main:cron:_dm:x_y"
    assert canonicalize_session_key(key, MAIN) == key
    assert not is_main_session_key(key, MAIN)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("agent:main:main", "agent:main:main"),
        ("  my-session  ", "my-session"),
        ("ünïcode:😀", "ünïcode:😀"),
        ("k" * 512, "k" * 512),
    ],
)
def test_valid_session_keys_pass(key: str, expected: str) -> None:
    """Any printable key without whitespace is valid and comes back trimmed."""
    assert validate_session_key(key) == expected


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("k" * 513, "limit is 512"),
        ("a b", "whitespace or a control character"),
        ("a\nb", "whitespace or a control character"),
        ("a\x00b", "U+0000"),
        ("a\x1bb", "U+001B"),
        ("a\u202eb", "U+202E"),
    ],
)
def test_garbage_session_keys_are_refused(key: str, message: str) -> None:
    """Empty, oversized and whitespace/control-character keys raise InvalidParams (400)."""
    with pytest.raises(InvalidParams, match=re.escape(message)) as caught:
        validate_session_key(key)
    assert caught.value.code == 400


# --------------------------------------------------------------------------- 17.2 E.164


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("+15551234567", "+15551234567"),
        ("15551234567", "+15551234567"),
        ("15551234567@s.whatsapp.net", "+15551234567"),
        ("15551234567:12@s.whatsapp.net", "+15551234567"),
        ("15551234567@c.us", "+15551234567"),
        ("123456789012345@lid", "+123456789012345"),
        ("", ""),
        (None, ""),
        ("abc", ""),
        ("+1 (555) 123-4567", "+15551234567"),
        ("555-1234", "5551234"),
        ("+44", "+44"),
    ],
)
def test_e164_normalisation(raw: str | None, expected: str) -> None:
    """Plus kept, 10+ digits get '+', JID and device suffixes stripped, non-digits removed."""
    assert normalize_e164(raw) == expected


# --------------------------------------------------------------------------- 17.2 identity links


def _links(links: dict[str, list[str]]) -> RoutingSettings:
    return RoutingSettings.from_config({"session": {"identityLinks": links}})


@pytest.mark.parametrize(
    ("links", "channel", "sender", "expected"),
    [
        ({}, "whatsapp", "+15551234567", None),
        ({"alice": ["+15551234567"]}, "whatsapp", "+15551234567", "alice"),
        ({"alice": ["+15551234567"]}, "whatsapp", "15551234567@s.whatsapp.net", "alice"),
        ({"alice": ["15551234567@s.whatsapp.net"]}, "whatsapp", "+15551234567", "alice"),
        ({"alice": ["telegram:123456789"]}, "telegram", "123456789", "alice"),
        ({"alice": ["whatsapp:+15551234567"]}, "whatsapp", "15551234567@s.whatsapp.net", "alice"),
        ({"alice": ["telegram:+15551234567"]}, "whatsapp", "+15551234567", None),
        ({"alice": ["+15551234567"]}, "whatsapp", "+19998887777", None),
        (
            {"alice": ["+15551234567"], "bob": ["discord:42", "+14445556666"]},
            "discord",
            "42",
            "bob",
        ),
        (
            {"alice": ["+15551234567"], "bob": ["+14445556666"]},
            "whatsapp",
            "+14445556666",
            "bob",
        ),
        ({"alice": ["WhatsApp:+15551234567"]}, "whatsapp", "+15551234567", "alice"),
        ({"alice": ["whatsapp:+15551234567"]}, "WHATSAPP", "+15551234567", "alice"),
        ({"alice": ["slack:U123abc"]}, "slack", "U123ABC", "alice"),
        ({"alice": ["slack:alice-id"]}, "slack", "bob-id", None),  # both "" as E.164
        ({"alice": ["15551234567:3@s.whatsapp.net"]}, "signal", "+15551234567", "alice"),
        ({"alice": ["+15551234567"]}, "whatsapp", "", None),
    ],
)
def test_linked_identities_resolve(
    links: dict[str, list[str]], channel: str, sender: str, expected: str | None
) -> None:
    """Bare identities match any channel, `channel:value` only that channel (any case);
    values compare as E.164 numbers or as written; no match gives None."""
    assert resolve_linked_identity(channel, sender, _links(links)) == expected


def test_linked_identity_rekeys_a_dm() -> None:
    """A linked sender's DM key uses the canonical name, shared across channels."""
    settings = RoutingSettings(
        dm_scope="per-peer",
        identity_links={"Alice": ("whatsapp:+15551234567", "telegram:777")},
    )
    via_whatsapp = route_inbound("whatsapp", None, "dm", "15551234567@s.whatsapp.net", settings)
    via_telegram = route_inbound("telegram", None, "dm", "777", settings)
    assert via_whatsapp.session_key == via_telegram.session_key == "agent:main:dm:alice"


def test_linked_identity_never_rekeys_a_group() -> None:
    """A linked member writing in a group keeps the group's own session."""
    settings = RoutingSettings(identity_links={"alice": ("+15551234567",)})
    route = route_inbound(
        "whatsapp", None, "group", "120363@g.us", settings, sender_id="+15551234567"
    )
    assert route.session_key == "agent:main:whatsapp:group:120363@g.us"
    key = build_session_key("main", "whatsapp", None, "group", "120363@g.us", settings, "alice")
    assert key == "agent:main:whatsapp:group:120363@g.us"


def test_dm_identity_lookup_falls_back_to_peer_id() -> None:
    """Without a sender id, the DM peer id is looked up in the identity links."""
    settings = RoutingSettings(dm_scope="per-channel-peer", identity_links={"bob": ("+1444",)})
    route = route_inbound("whatsapp", None, "dm", "+1444", settings)
    assert route == InboundRoute(agent_id="main", session_key="agent:main:whatsapp:dm:bob")


# --------------------------------------------------------------------------- 5 bindings


BINDINGS_CONFIG = {
    "agents": {
        "list": [{"id": "main"}, {"id": "Helper", "default": True}],
        "bindings": [
            {"agentId": "vip", "match": {"channel": "whatsapp", "peer": {"id": "+1999"}}},
            {"agentId": "Work", "match": {"channel": "slack", "accountId": "ACME"}},
            {"agentId": "groups", "match": {"peer": {"kind": "group"}}},
            {"agentId": "discord", "match": {"channel": "Discord"}},
            {"match": {"channel": "telegram"}},  # no agentId: ignored
            "not a binding",
        ],
    }
}


@pytest.mark.parametrize(
    ("channel", "account", "kind", "peer", "expected"),
    [
        ("whatsapp", None, "dm", "+1999", "vip"),
        ("whatsapp", None, "dm", "+1000", "helper"),
        ("slack", "acme", "dm", "U1", "work"),
        ("slack", None, "dm", "U1", "helper"),
        ("whatsapp", None, "group", "+1999", "vip"),
        ("whatsapp", None, "group", "g1", "groups"),
        ("discord", "x", "dm", "1", "discord"),
        ("DISCORD", None, "dm", "1", "discord"),
        ("telegram", None, "dm", "1", "helper"),
    ],
)
def test_first_matching_binding_picks_the_agent(
    channel: str, account: str | None, kind: str, peer: str, expected: str
) -> None:
    """The first binding whose set fields all equal the inbound values wins, else default."""
    settings = RoutingSettings.from_config(BINDINGS_CONFIG)
    assert resolve_agent_id(channel, account, kind, peer, settings) == expected


def test_binding_without_match_catches_everything() -> None:
    """A binding with no match fields applies to every inbound message."""
    settings = RoutingSettings(bindings=(AgentBinding(agent_id="all"),))
    assert resolve_agent_id("any", None, "dm", "x", settings) == "all"


def test_inbound_route_uses_binding_agent_in_the_key() -> None:
    """The agent chosen by a binding owns the session key built for the message."""
    settings = RoutingSettings.from_config(BINDINGS_CONFIG)
    route = route_inbound("slack", "acme", "channel", "C42", settings, sender_id="U1")
    assert route == InboundRoute("work", "agent:work:slack:channel:c42")


# --------------------------------------------------------------------------- settings


def test_settings_from_default_config() -> None:
    """The shipped defaults give mainKey main, dmScope main, agent main, no links or bindings."""
    assert RoutingSettings.from_config(DEFAULTS) == RoutingSettings()


def test_settings_from_config_overrides() -> None:
    """session.* and agents.* overrides are read and normalised."""
    config = deep_merge(
        DEFAULTS,
        {
            "session": {
                "mainKey": " Home ",
                "dmScope": "per-channel-peer",
                "identityLinks": {"alice": ["+1555"], "broken": "x"},
            },
            "agents": {"list": [{"id": "Ops", "default": True}], "bindings": []},
        },
    )
    settings = RoutingSettings.from_config(config)
    assert settings.main_key == "home"
    assert settings.dm_scope == "per-channel-peer"
    assert settings.default_agent == "ops"
    assert settings.identity_links == {"alice": ("+1555",)}


def test_settings_from_empty_config() -> None:
    """A config without session or agents sections gives the defaults."""
    assert RoutingSettings.from_config({}) == RoutingSettings()


def test_unknown_dm_scope_is_refused() -> None:
    """An unknown dmScope raises InvalidParams naming the valid scopes."""
    with pytest.raises(InvalidParams, match="per-channel-peer"):
        RoutingSettings.from_config({"session": {"dmScope": "everyone"}})
