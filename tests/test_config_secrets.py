"""Which config keys are secrets, and the pure split/join of secrets and their markers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from gsv_core.config import GsvConfig
from gsv_core.config import secrets as cs
from gsv_core.config.mask import is_secret_key
from gsv_core.config.mask import mask_secrets
from gsv_core.errors import InvalidParams

# every secret-bearing key the issue names, as config.set paths
SECRET_PATHS = (
    "apiKeys.anthropic",
    "apiKeys.openai",
    "apiKeys.google",
    "apiKeys.openrouter",
    "apiKeys.mistral",  # apiKeys is open: any provider name is a secret there
    "providers.x.apiKey",
    "channels.telegram.botToken",
    "channels.telegram.accounts.work.botToken",
    "channels.discord.botToken",
    "channels.slack.appToken",
    "channels.slack.botToken",
    "channels.whatsapp.accessToken",
    "channels.whatsapp.appSecret",
    "channels.whatsapp.verifyToken",
    "auth.token",
)
NOT_SECRETS = (
    "channels.whatsapp.phoneNumberId",
    "channels.whatsapp.apiBaseUrl",
    "channels.telegram.dmPolicy",
    "channels.telegram.allowFrom",
    "compaction.reserveTokens",
    "compaction.keepRecentTokens",
    "providers.x.maxTokens",
    "model.contextWindow",
)


def _is_secret_path(path: str) -> bool:
    *parents, name = path.split(".")
    return is_secret_key(name, parents[-1] if parents else None)


@pytest.mark.parametrize("path", SECRET_PATHS)
def test_every_named_secret_key_is_a_secret(path: str) -> None:
    """is_secret_key covers API keys, channel tokens and secrets, provider keys, auth.token."""
    assert _is_secret_path(path)


@pytest.mark.parametrize("path", NOT_SECRETS)
def test_counts_and_ids_are_not_secrets(path: str) -> None:
    """Token counts, ids and URLs are plain settings."""
    assert not _is_secret_path(path)


def _fields(model: type[BaseModel], parent: str) -> list[tuple[str, str]]:
    found = []
    for name, info in model.model_fields.items():
        wire = info.alias or name
        found.append((wire, parent))
        for kind in (info.annotation, *getattr(info.annotation, "__args__", ())):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                found.extend(_fields(kind, wire))
    return found


def test_the_schema_s_secret_fields_are_exactly_the_credentials() -> None:
    """Walking the config schema, the fields is_secret_key flags are the credentials."""
    secret = {(n, p) for n, p in _fields(GsvConfig, "") if is_secret_key(n, p or None)}
    assert secret == {
        ("anthropic", "apiKeys"),
        ("openai", "apiKeys"),
        ("google", "apiKeys"),
        ("openrouter", "apiKeys"),
        ("token", "auth"),
        ("apiKey", "providers"),  # providers.<name>.apiKey
        ("apiKey", "embeddings"),  # memory.embeddings.apiKey
    }


def tree_of(paths: Mapping[str, Any]) -> dict[str, Any]:
    """The nested config tree with `paths` (dotted) set."""
    tree: dict[str, Any] = {}
    for path, value in paths.items():
        *parents, name = path.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[name] = value
    return tree


def test_split_takes_out_every_secret_and_join_puts_it_back() -> None:
    """Markers named by path replace the values; joining with the values restores the tree."""
    values = {path: f"value-of-{i}" for i, path in enumerate(SECRET_PATHS)}
    tree = tree_of({**values, "channels.whatsapp.phoneNumberId": "123", "model.id": "m"})
    split = cs.split_secrets(tree)
    assert split.invalid == []
    assert split.stored["auth"]["token"] == {"$secret": "gateway.token"}
    assert split.stored["apiKeys"]["openai"] == {"$secret": "config.apiKeys.openai"}
    assert split.stored["channels"]["whatsapp"]["phoneNumberId"] == "123"
    assert not any(v in repr(split.stored) for v in values.values())
    assert set(split.secrets.values()) == set(values.values())
    joined, missing = cs.join_secrets(split.stored, split.secrets)
    assert joined == tree and missing == []


def test_masked_keys_and_split_keys_agree() -> None:
    """Whatever masking hides is what split takes out, lists of objects included."""
    tree = tree_of({p: f"v{i}" for i, p in enumerate(SECRET_PATHS)})
    tree["agents"] = {"list": [{"id": "a", "apiKey": "in-a-list"}]}
    split = cs.split_secrets(tree)
    assert split.secrets["config.agents.list.0.apiKey"] == "in-a-list"
    masked = repr(mask_secrets(tree))
    assert not any(repr(value) in masked for value in split.secrets.values())


def test_values_are_stripped_as_the_store_keeps_them() -> None:
    """A pasted key with a trailing newline is stored (and used) without it."""
    assert cs.split_secrets({"apiKeys": {"openai": " sk-1\n"}}).secrets == {
        "config.apiKeys.openai": "sk-1"
    }


@pytest.mark.parametrize("bad", [123, True, ["a"], "", "   "])
def test_a_secret_that_is_no_non_empty_string_is_invalid(bad: Any) -> None:
    """Numbers, lists and blank strings at a secret key are listed, never stored."""
    split = cs.split_secrets({"channels": {"slack": {"botToken": bad, "appToken": "ok"}}})
    assert split.invalid == ["channels.slack.botToken"]
    with pytest.raises(InvalidParams, match=r"channels\.slack\.botToken"):
        cs.check_secrets(split)


def test_the_refusal_never_quotes_the_value() -> None:
    """A real token put where it does not fit is named by its key, not echoed."""
    split = cs.split_secrets({"channels": {"slack": {"botToken": 987654321987}}})
    with pytest.raises(InvalidParams) as raised:
        cs.check_secrets(split)
    assert "987654321987" not in repr(raised.value.to_error_shape())


def test_a_secret_under_a_dotted_key_is_invalid() -> None:
    """Store names are dotted paths, so a key with a dot cannot name a secret."""
    split = cs.split_secrets({"channels": {"slack": {"accounts": {"a.b": {"botToken": "t"}}}}})
    assert split.invalid == ["channels.slack.accounts.a.b.botToken"]


def test_markers_are_refused_from_callers() -> None:
    """`$secret` is the database's notation: a caller may not point a key at a secret."""
    with pytest.raises(InvalidParams, match=r"channels\.x\.botToken: '\$secret' is reserved"):
        cs.refuse_markers({"botToken": {"$secret": "gateway.token"}}, "channels.x")
    cs.refuse_markers({"botToken": "plain"}, "channels.x")


def test_a_missing_or_foreign_marker_reads_as_unset() -> None:
    """A marker whose secret is gone, or that names another path's secret, is left out."""
    stored = {
        "apiKeys": {"openai": {"$secret": "config.apiKeys.openai"}},
        "channels": {"x": {"botToken": {"$secret": "gateway.token"}}},
    }
    assert cs.referenced_names(stored) == {"config.apiKeys.openai": "apiKeys.openai"}
    joined, missing = cs.join_secrets(stored, {"gateway.token": "owner-token"})
    assert joined == {"apiKeys": {}, "channels": {"x": {}}}
    assert missing == ["apiKeys.openai", "channels.x.botToken"]


def test_split_leaves_markers_as_they_are() -> None:
    """A stored tree split again (as at every start) keeps its markers, finds no secret."""
    stored = cs.split_secrets(tree_of({p: "v" for p in SECRET_PATHS})).stored
    again = cs.split_secrets(stored)
    assert again.stored == stored and again.secrets == {} and again.invalid == []


def test_plaintext_paths_name_what_is_left_in_plain_text() -> None:
    """A tree mixing markers and plain values: only the plain ones are reported."""
    stored = {
        "apiKeys": {"openai": {"$secret": "config.apiKeys.openai"}, "google": "plain"},
        "auth": {"token": "also-plain"},
        "model": {"id": "not-a-secret"},
    }
    assert cs.plaintext_paths(stored) == ["apiKeys.google", "auth.token"]
