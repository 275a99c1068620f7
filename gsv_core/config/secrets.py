"""Which gateway config values are secrets, and the markers the database keeps instead.

A secret value (every `apiKeys.*`, `auth.token`, channel tokens and app secrets,
`providers.*.apiKey`: whatever `config.mask.is_secret_key` says, the same rule masking uses)
lives in the local secret store; the database row holds `{"$secret": "<name>"}` in its
place. Names: `auth.token` is `gateway.token`, the entry the CLI and a local node read,
so the owner's token is shared with no typing; any other path is `config.<path>`.

Everything here is pure: `split_secrets` turns real values into markers plus a
{name: value} map, `join_secrets` puts values back; the gateway's ConfigService does
the store I/O around them.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.config.mask import is_secret_key
from gsv_core.errors import InvalidParams

MARKER_KEY = "$secret"
GATEWAY_TOKEN = "gateway.token"
_NAMED = {"auth.token": GATEWAY_TOKEN}


def secret_name(path: str) -> str:
    """The secret store name of a config path (`auth.token` -> `gateway.token`)."""
    return _NAMED.get(path) or f"config.{path}"


def is_marker(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {MARKER_KEY}


def marker(name: str) -> dict[str, str]:
    return {MARKER_KEY: name}


@dataclass
class Split:
    """A config tree with its secrets taken out."""

    stored: dict[str, Any]  # what the database may hold: markers in place of secrets
    secrets: dict[str, str] = field(default_factory=dict)  # store name -> value
    invalid: list[str] = field(default_factory=list)  # secret paths whose value is no string


NameOf = Callable[[str], str]


def split_secrets(tree: Mapping[str, Any], name_of: NameOf = secret_name) -> Split:
    """Markers in place of every secret string; values are stripped (as the store keeps
    them). A secret key holding anything else than a non-empty string is listed in
    `invalid` and left in place (the caller refuses it or reports it). `name_of` gives
    the store name of a dotted path (trees other than the config use their own names)."""
    split = Split(stored={})
    split.stored = _split_dict(tree, [], None, _Splitter(split, name_of))
    return split


@dataclass
class _Splitter:
    split: Split
    name_of: NameOf


def _split_dict(
    tree: Mapping[str, Any], at: list[str], parent: str | None, split: _Splitter
) -> Any:
    result: dict[str, Any] = {}
    for key, value in tree.items():
        path = [*at, key]
        if is_marker(value):  # already split (and `$secret` itself reads as a secret name)
            result[key] = dict(value)
        elif is_secret_key(key, parent) and not isinstance(value, dict):
            result[key] = _take(path, value, split)
        else:
            result[key] = _split_value(value, path, key, split)
    return result


def _split_value(value: Any, at: list[str], name: str, split: _Splitter) -> Any:
    if isinstance(value, dict):
        return _split_dict(value, at, name, split)
    if isinstance(value, list):  # list items are masked by their own keys (mask_secrets)
        return [_split_value(v, [*at, str(i)], "", split) for i, v in enumerate(value)]
    return value


def _take(path: list[str], value: Any, split: _Splitter) -> Any:
    dotted = ".".join(path)
    if value is None:
        return None
    if isinstance(value, list) and value and may_pool(path):  # `apiKeys.openai = [k1, k2]`
        return [_take([*path, str(i)], item, split) for i, item in enumerate(value)]
    storable_path = all(p.strip() and "." not in p for p in path)  # names are dotted
    if not isinstance(value, str) or not value.strip() or not storable_path:
        split.split.invalid.append(dotted)
        return value
    name = split.name_of(dotted)
    split.split.secrets[name] = value.strip()
    return marker(name)


def may_pool(path: list[str]) -> bool:
    """Whether a secret path may hold a pool of keys: a provider's API key
    (`apiKeys.<name>`, `providers.<name>.apiKey`), not a channel's token."""
    return (len(path) == 2 and path[0] == "apiKeys") or (
        len(path) == 3 and path[0] == "providers" and path[2] == "apiKey"
    )


def plaintext_paths(stored: Mapping[str, Any], name_of: NameOf = secret_name) -> list[str]:
    """The paths of a stored tree whose secret is in plain text, not a marker (what
    `gsv security audit` reports; the gateway moves them at start)."""
    split = split_secrets(stored, name_of)
    found = referenced_names(split.stored, name_of)
    return sorted(path for name, path in found.items() if name in split.secrets)


def check_secrets(split: Split) -> None:
    """InvalidParams naming the first secret key whose value cannot be stored (the value
    itself is never quoted: it may be a real secret put in the wrong place)."""
    if split.invalid:
        path = split.invalid[0]
        raise InvalidParams(
            f"invalid config value for {path}: a secret must be a non-empty string "
            "(set it to null to remove it), under keys without dots",
            details={"errors": [{"field": p, "message": "not a storable secret"}
                                for p in split.invalid]},
        )  # fmt: skip


def refuse_markers(value: Any, path: str) -> None:
    """A `$secret` marker is the database's own notation, never accepted from a caller
    (it would point a key at another secret in the store)."""
    for found in _marker_paths(value, [path]):
        raise InvalidParams(f"invalid config value for {found}: '{MARKER_KEY}' is reserved")


def _marker_paths(value: Any, at: list[str]) -> Iterator[str]:
    if isinstance(value, dict):
        if MARKER_KEY in value:
            yield ".".join(at)
        for key, child in value.items():
            yield from _marker_paths(child, [*at, str(key)])
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _marker_paths(child, [*at, str(i)])


def referenced_names(stored: Mapping[str, Any], name_of: NameOf = secret_name) -> dict[str, str]:
    """{store name: path} of every marker at a secret key that names the secret its path
    gets (`name_of`)."""
    found = _markers(stored, [], None, name_of)
    return {name: path for path, name in found if name is not None}


def join_secrets(
    stored: Mapping[str, Any], values: Mapping[str, str], name_of: NameOf = secret_name
) -> tuple[Any, list[str]]:
    """(the tree with every marker replaced by its value, the paths whose secret is
    missing from `values` or whose marker is not the one that path gets). Those keys are
    left out, so they read as unset."""
    markers = dict(_markers(stored, [], None, name_of))
    # a marker naming another path's secret is never followed: its name reads as None
    missing = [path for path, name in markers.items() if name is None or name not in values]
    return _join(stored, [], None, lambda path: values.get(markers[path] or "")), missing


def _markers(
    tree: Any, at: list[str], parent: str | None, name_of: NameOf
) -> Iterator[tuple[str, str | None]]:
    if isinstance(tree, list):
        for i, item in enumerate(tree):
            yield from _markers(item, [*at, str(i)], "", name_of)
        return
    if not isinstance(tree, dict):
        return
    for key, value in tree.items():
        path = ".".join([*at, key])
        if is_secret_key(key, parent) and is_marker(value):
            yield path, name_of(path) if value[MARKER_KEY] == name_of(path) else None
        elif is_secret_key(key, parent) and isinstance(value, list):  # a key pool
            for i, item in enumerate(value):
                if is_marker(item):
                    at_item = f"{path}.{i}"
                    yield (
                        at_item,
                        name_of(at_item) if item[MARKER_KEY] == name_of(at_item) else None,
                    )
        else:
            yield from _markers(value, [*at, key], key, name_of)


def _join(tree: Any, at: list[str], parent: str | None, value_at: Callable[[str], Any]) -> Any:
    if isinstance(tree, list):
        return [_join(item, [*at, str(i)], "", value_at) for i, item in enumerate(tree)]
    if not isinstance(tree, dict):
        return tree
    result: dict[str, Any] = {}
    for key, value in tree.items():
        if is_secret_key(key, parent) and is_marker(value):
            found = value_at(".".join([*at, key]))
            if found is not None:
                result[key] = found
        elif is_secret_key(key, parent) and isinstance(value, list) and any(map(is_marker, value)):
            pool = [value_at(".".join([*at, key, str(i)])) if is_marker(item) else item
                    for i, item in enumerate(value)]  # fmt: skip
            result[key] = [item for item in pool if item is not None]
        else:
            result[key] = _join(value, [*at, key], key, value_at)
    return result
