"""The CLI's own local config (a TOML file kept with tomlkit) and its secret store.

The config file is `resolve_paths().config_file`; tomlkit keeps the user's comments and
key order when `gsv local-config set` rewrites it. Known keys are typed and validated
(`KNOWN_KEYS`); keys the file holds but we do not know are read back unchanged.

Secrets (the gateway token, anything named like a token/secret/password/API key) never
go into config.toml. `get_secret()` looks in order at:

    1. the environment        gateway.token -> GSV_TOKEN, other names -> GSV_<NAME>
    2. the system keyring     service "gsv" ("gsv:<GSV_HOME>" under a GSV_HOME),
                              username = the dotted name
    3. a 0600 secrets file    resolve_paths().secrets_file (for boxes with no keyring)
    4. config.toml            a legacy plain value, read only

A headless machine has no Secret Service, so keyring raises on every call: each keyring
failure falls through to the next source, and `set_secret()` then writes the 0600 file
and says so. keyring is imported inside functions so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import TypeVar
from urllib.parse import urlsplit

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from gsv_core.defaults import DEFAULT_GATEWAY_URL
from gsv_core.defaults import SANDBOX_MODES
from gsv_core.errors import Conflict
from gsv_core.errors import InvalidParams
from gsv_core.fsmodes import FILE_MODE
from gsv_core.fsmodes import make_private_dir
from gsv_core.paths import gsv_home
from gsv_core.paths import resolve_paths
from gsv_core.secret_names import looks_secret

log = logging.getLogger(__name__)

DEFAULT_SESSION_KEY = "agent:main:cli:dm:main"
KEYRING_SERVICE = "gsv"
_SECRET_ENV = {"gateway.token": "GSV_TOKEN"}
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})

# --- known keys ---------------------------------------------------------------------------


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParams(f"{key} must be a non-empty string (use unset to clear it)")
    return value.strip()


def _url(key: str, value: Any) -> str:
    url = _text(key, value)
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise InvalidParams(f"{key} must be a ws:// or wss:// URL, got {url!r}")
    return url


def _path(key: str, value: Any) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    # stored absolute: a relative path would mean something else from every cwd
    return os.path.abspath(os.path.expanduser(_text(key, value)))


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise InvalidParams(f"{key} must be a boolean (true/false/yes/no/1/0), got {value!r}")


def _sandbox_mode(key: str, value: Any) -> str:
    mode = _text(key, value).lower()
    if mode not in SANDBOX_MODES:
        raise InvalidParams(f"{key} must be one of {', '.join(SANDBOX_MODES)}, got {value!r}")
    return mode


def _paths(key: str, value: Any) -> list[str]:
    """A list of paths, or one string of them separated by commas; stored absolute."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise InvalidParams(f"{key} must be a list of paths or one comma-separated string")
    paths = [_path(key, item) for item in items if item.strip()]
    if not paths:
        raise InvalidParams(f"{key} needs at least one path (use unset to clear it)")
    return paths


@dataclass(frozen=True)
class KeySpec:
    """One known local-config key: how to validate it, its default and a one-line help."""

    key: str
    coerce: Callable[[str, Any], Any] | None  # None: a secret, kept out of config.toml
    help: str
    default: Any = None

    @property
    def secret(self) -> bool:
        return self.coerce is None


KNOWN_KEYS: dict[str, KeySpec] = {
    spec.key: spec
    for spec in (
        KeySpec("gateway.url", _url, "WebSocket URL of the gateway", DEFAULT_GATEWAY_URL),
        KeySpec("gateway.token", None, "gateway auth token (secret store only)"),
        KeySpec("node.id", _text, "id this machine uses when it runs as a node"),
        KeySpec("node.workspace", _path, "directory the node's tools work in"),
        KeySpec("node.restrict_to_workspace", _bool, "refuse tool paths outside the workspace"),
        KeySpec(
            "node.sandbox",
            _sandbox_mode,
            "OS sandbox of node commands: auto, bwrap, seatbelt or off (docs/sandbox.md)",
            "auto",
        ),
        KeySpec("node.sandboxNetwork", _bool, "sandboxed commands reach the network", False),
        KeySpec("node.sandboxWritable", _paths, "more paths sandboxed commands may write"),
        KeySpec("node.sandboxHidden", _paths, "more paths sandboxed commands must not see"),
        KeySpec("session.default_key", _text, "session key used by default", DEFAULT_SESSION_KEY),
    )
}


def is_secret_key(key: str) -> bool:
    """Whether a dotted key holds a secret: its last segment looks like a credential."""
    spec = KNOWN_KEYS.get(key)
    return spec.secret if spec else looks_secret(key.rsplit(".", 1)[-1])


def mask_secret(value: str) -> str:
    """`abcd...wxyz` for values of 12+ characters (enough left hidden), else `****`."""
    return f"{value[:4]}...{value[-4:]}" if len(value) >= 12 else "****"


def generate_token() -> str:
    """A fresh random gateway token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


# --- TOML files ---------------------------------------------------------------------------


def _split(key: str) -> list[str]:
    parts = key.split(".")
    if not key or any(not part.strip() for part in parts):
        raise InvalidParams(f"bad key {key!r}: expected a dotted name like gateway.url")
    return parts


def _read_toml(path: Path) -> TOMLDocument:
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return tomlkit.document()
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise InvalidParams(f"{path} is not valid TOML: {exc}") from None


def _write_atomic(path: Path, text: str, mode: int) -> None:
    """Write via a temp file in the same directory and os.replace, so a crash never leaves
    a half-written file; the temp file gets `mode` before any content is written."""
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _lookup(doc: dict[str, Any], parts: list[str]) -> Any | None:
    node: Any = doc
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node.unwrap() if hasattr(node, "unwrap") else node


def _assign(doc: dict[str, Any], parts: list[str], value: Any) -> None:
    node: Any = doc
    for depth, part in enumerate(parts[:-1]):
        if part not in node:
            node[part] = tomlkit.table()
        node = node[part]
        if not isinstance(node, dict):
            raise InvalidParams(f"{'.'.join(parts[: depth + 1])} is a value, not a table")
    node[parts[-1]] = value


def _remove(doc: dict[str, Any], parts: list[str]) -> bool:
    node: Any = doc
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or parts[-1] not in node:
        return False
    del node[parts[-1]]
    return True


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


# --- the local config ---------------------------------------------------------------------


@dataclass(frozen=True)
class ShownValue:
    """One line of `gsv local-config show`: secrets already masked."""

    key: str
    value: Any
    source: str  # config | default | unset | env | keyring | file


class LocalConfig:
    """The parsed config.toml: dotted get/set/unset over a tomlkit document."""

    def __init__(self, path: Path, doc: TOMLDocument) -> None:
        self.path = path
        self._doc = doc

    def get(self, key: str) -> Any | None:
        """The value in the file, else the key's default (None when it has neither)."""
        value = self.stored(key)
        if value is None and key in KNOWN_KEYS:
            return KNOWN_KEYS[key].default
        return value

    def stored(self, key: str) -> Any | None:
        """The value the file holds for `key`, without defaults."""
        return _lookup(self._doc, _split(key))

    def set(self, key: str, value: Any) -> Any:
        """Validate, coerce (strings from the CLI become bools etc.) and set; returns the
        stored value. Call save() to write the file."""
        spec = KNOWN_KEYS.get(key)
        if spec is None:
            known = ", ".join(KNOWN_KEYS)
            raise InvalidParams(f"unknown local config key '{key}'; known keys: {known}")
        if spec.coerce is None:
            raise InvalidParams(f"{key} is a secret: store it with set_secret(), not in the file")
        coerced = spec.coerce(key, value)
        _assign(self._doc, _split(key), coerced)
        return coerced

    def unset(self, key: str) -> bool:
        """Remove `key` from the file (its default applies again); False if it was absent."""
        parts = _split(key)
        if key not in KNOWN_KEYS and _lookup(self._doc, parts) is None:
            known = ", ".join(KNOWN_KEYS)
            raise InvalidParams(f"unknown local config key '{key}'; known keys: {known}")
        return _remove(self._doc, parts)

    def save(self) -> None:
        """Write the file atomically, keeping its comments and order; owner-only (0600)."""
        _write_atomic(self.path, self._doc.as_string(), FILE_MODE)

    def as_dict(self) -> dict[str, Any]:
        """The file's contents as plain nested dicts (no defaults, no tomlkit types)."""
        return dict(self._doc.unwrap())

    def describe(self) -> list[ShownValue]:
        """Every known key plus any other key in the file, secrets masked."""
        flat = _flatten(self.as_dict())
        keys = list(KNOWN_KEYS) + [key for key in flat if key not in KNOWN_KEYS]
        return [self._describe_one(key, flat.get(key)) for key in keys]

    def _describe_one(self, key: str, stored: Any) -> ShownValue:
        if is_secret_key(key):
            found = _find_secret(key, self)
            if found is None:
                return ShownValue(key, None, "unset")
            return ShownValue(key, mask_secret(found.value), found.source)
        if stored is not None:
            return ShownValue(key, stored, "config")
        default = KNOWN_KEYS[key].default
        return ShownValue(key, default, "default" if default is not None else "unset")


def load_local_config() -> LocalConfig:
    """Read config.toml (an absent file is an empty config)."""
    path = resolve_paths().config_file
    return LocalConfig(path, _read_toml(path))


def write_initial_config(url: str | None = None, *, overwrite: bool = False) -> Path:
    """Write a fresh, commented config.toml; Conflict if one exists and not `overwrite`."""
    path = resolve_paths().config_file
    gateway_url = _url("gateway.url", url) if url is not None else DEFAULT_GATEWAY_URL
    if path.exists() and not overwrite:
        raise Conflict(f"{path} already exists")
    _write_atomic(path, _initial_document(gateway_url).as_string(), FILE_MODE)
    return path


def _initial_document(gateway_url: str) -> TOMLDocument:
    doc = tomlkit.document()
    _add_comments(
        doc,
        "gsv local config: read by the gsv CLI and `gsv node run` here.",
        "Change it with `gsv local-config set KEY VALUE`. Secrets such as",
        "gateway.token live in the keyring or a 0600 file, never here.",
    )
    gateway = _add_comments(tomlkit.table(), "Gateway to talk to (--url and GSV_URL override it).")
    gateway.add("url", gateway_url)
    node = _add_comments(
        tomlkit.table(),
        "Used when this machine runs as a node (`gsv node run`).",
        'id = "laptop"                # default: the hostname',
        'workspace = "/home/me/gsv"   # where the node tools work',
        "restrict_to_workspace = false",
    )
    session = _add_comments(tomlkit.table(), "Session the CLI chats in when none is given.")
    session.add("default_key", DEFAULT_SESSION_KEY)
    doc.add("gateway", gateway)
    doc.add("node", node)
    doc.add("session", session)
    return doc


_Container = TypeVar("_Container", TOMLDocument, Table)


def _add_comments(container: _Container, *lines: str) -> _Container:
    """`container` with `lines` added as TOML comments."""
    for line in lines:
        container.add(tomlkit.comment(line))
    return container


# --- secrets ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FoundSecret:
    value: str
    source: str  # env | keyring | file | config


def secret_env_var(name: str) -> str:
    """The environment variable that overrides a secret (gateway.token -> GSV_TOKEN)."""
    return _SECRET_ENV.get(name) or "GSV_" + re.sub(r"[^A-Za-z0-9]+", "_", name).upper()


def find_secret(name: str) -> FoundSecret | None:
    """The secret's value and where it came from (env > keyring > file > config.toml)."""
    return _find_secret(name, None)


def get_secret(name: str) -> str | None:
    """The secret's value, or None when no source has it."""
    found = find_secret(name)
    return found.value if found else None


def stored_secret(name: str) -> str | None:
    """The secret as the store keeps it (keyring, else the 0600 file), without the
    environment override or a legacy config.toml value: for the gateway, whose config
    refers to entries it wrote there itself (gsv_core.config.secrets)."""
    return _keyring_get(name) or _file_secret(name)


def _file_secret(name: str) -> str | None:
    value = _lookup(_read_toml(resolve_paths().secrets_file), _split(name))
    return value if isinstance(value, str) and value else None


def _find_secret(name: str, config: LocalConfig | None) -> FoundSecret | None:
    env = os.environ.get(secret_env_var(name), "").strip()
    if env:
        return FoundSecret(env, "env")
    from_keyring = _keyring_get(name)
    if from_keyring:
        return FoundSecret(from_keyring, "keyring")
    from_file = _file_secret(name)
    if from_file:
        return FoundSecret(from_file, "file")
    legacy = (config or load_local_config()).stored(name)
    if isinstance(legacy, str) and legacy:
        return FoundSecret(legacy, "config")
    return None


def set_secret(name: str, value: str) -> str:
    """Store a secret in the keyring, else in the 0600 secrets file; returns a sentence
    saying where it went (with the reason when the keyring could not be used)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidParams(f"{name} must be a non-empty string")
    value = value.strip()
    failure = _keyring_set(name, value)
    if failure is None:
        _forget_in_file(name)
        _forget_in_config(name)
        return f"stored {name} in the system keyring (service '{keyring_service()}')"
    path = resolve_paths().secrets_file
    doc = _read_toml(path)
    _assign(doc, _split(name), value)
    _write_atomic(path, doc.as_string(), FILE_MODE)
    _forget_in_config(name)
    log.info("no usable keyring (%s): stored %s in %s", failure, name, path)
    return f"no usable keyring ({failure}): stored {name} in {path} (mode 0600)"


def delete_secret(name: str) -> list[str]:
    """Remove a secret from every store we write (keyring, file, legacy config value);
    returns the sources it was removed from. The environment is left alone."""
    removed = []
    if _keyring_get(name) is not None and _keyring_delete(name):
        removed.append("keyring")
    if _forget_in_file(name):
        removed.append("file")
    if _forget_in_config(name):
        removed.append("config")
    return removed


def _forget_in_file(name: str) -> bool:
    path = resolve_paths().secrets_file
    doc = _read_toml(path)
    if not _remove(doc, _split(name)):
        return False
    _write_atomic(path, doc.as_string(), FILE_MODE)
    return True


def _forget_in_config(name: str) -> bool:
    try:
        config = load_local_config()
    except InvalidParams as exc:  # a broken config.toml must not stop a secret being kept
        log.warning("not checking config.toml for a legacy %s: %s", name, exc.message)
        return False
    if config.stored(name) is None:
        return False
    config.unset(name)
    config.save()
    return True


def keyring_service() -> str:
    """The keyring service of this gsv: "gsv", or "gsv:<GSV_HOME>" under a GSV_HOME, so
    that a second home on the machine (a test instance, another profile) neither reads
    nor overwrites this one's secrets (its owner token above all)."""
    home = gsv_home()
    return KEYRING_SERVICE if home is None else f"{KEYRING_SERVICE}:{home.resolve()}"


# Keyring backends fail in more ways than KeyringError (D-Bus errors, a locked collection,
# a missing helper binary), and any failure means the same thing: use the next source.


def _keyring_get(name: str) -> str | None:
    try:
        import keyring

        value = keyring.get_password(keyring_service(), name)
    except Exception as exc:
        log.debug("keyring lookup of %s failed: %s", name, _describe(exc))
        return None
    return value if isinstance(value, str) and value else None


def _keyring_set(name: str, value: str) -> str | None:
    """None when the keyring stored the secret and gives it back, else why not. Read back:
    keyring's null backend (how people turn keyrings off) and some broken ones take a
    secret without error and keep nothing."""
    try:
        import keyring

        keyring.set_password(keyring_service(), name, value)
    except Exception as exc:
        return _describe(exc)
    if _keyring_get(name) != value:
        return "the keyring accepted it but does not give it back"
    return None


def _keyring_delete(name: str) -> bool:
    try:
        import keyring

        keyring.delete_password(keyring_service(), name)
    except Exception as exc:
        log.debug("keyring delete of %s failed: %s", name, _describe(exc))
        return False
    return True


def _describe(exc: Exception) -> str:
    # keyring's own messages run to several sentences; the first one says enough
    first = str(exc).split(". ")[0].strip()
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
