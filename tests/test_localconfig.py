"""gsv_core.localconfig: the TOML local config (typed keys, comments kept) and the secret
store (env > keyring > 0600 file > legacy config value)."""

from __future__ import annotations

import stat
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from gsv_core.errors import Conflict
from gsv_core.errors import InvalidParams
from gsv_core.localconfig import DEFAULT_GATEWAY_URL
from gsv_core.localconfig import DEFAULT_SESSION_KEY
from gsv_core.localconfig import delete_secret
from gsv_core.localconfig import find_secret
from gsv_core.localconfig import generate_token
from gsv_core.localconfig import get_secret
from gsv_core.localconfig import is_secret_key
from gsv_core.localconfig import keyring_service
from gsv_core.localconfig import load_local_config
from gsv_core.localconfig import mask_secret
from gsv_core.localconfig import set_secret
from gsv_core.localconfig import write_initial_config
from gsv_core.paths import resolve_paths
from tests.fakes.memory_keyring import MemoryKeyring

COMMENTED = """\
# my machine
[gateway]
# where the gateway lives
url = "ws://10.0.0.2:8787/ws"  # office box

[node]
id = "laptop"
"""


@pytest.fixture
def no_keyring() -> None:
    """Make every keyring call fail, as on a headless box (restored by conftest)."""
    keyring.set_keyring(fail.Keyring())


def _write_config(text: str) -> Path:
    path = resolve_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_missing_file_reads_as_defaults() -> None:
    """With no config.toml, known keys give their defaults and others None."""
    config = load_local_config()
    assert config.path == resolve_paths().config_file
    assert config.get("gateway.url") == DEFAULT_GATEWAY_URL
    assert config.get("session.default_key") == DEFAULT_SESSION_KEY
    assert config.get("node.id") is None
    assert config.as_dict() == {}


def test_set_keeps_comments_and_order() -> None:
    """Rewriting a value keeps the user's comments, the inline comment and key order."""
    path = _write_config(COMMENTED)
    config = load_local_config()
    config.set("gateway.url", "wss://gsv.example.org/ws")
    config.set("node.restrict_to_workspace", "yes")
    config.save()
    text = path.read_text()
    assert "# my machine" in text and "# where the gateway lives" in text
    assert 'url = "wss://gsv.example.org/ws"  # office box' in text
    assert text.index("[gateway]") < text.index("[node]")
    reloaded = load_local_config()
    assert reloaded.get("gateway.url") == "wss://gsv.example.org/ws"
    assert reloaded.get("node.restrict_to_workspace") is True
    assert reloaded.get("node.id") == "laptop"


def test_set_creates_missing_tables() -> None:
    """Setting a key in a section the file lacks adds the section."""
    config = load_local_config()
    config.set("session.default_key", "agent:main:cli:dm:work")
    config.save()
    assert load_local_config().as_dict() == {"session": {"default_key": "agent:main:cli:dm:work"}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("YES", True), ("1", True), ("false", False), ("no", False), ("0", False)],
)
def test_bool_values_are_coerced_from_strings(raw: str, expected: bool) -> None:
    """CLI strings true/false/yes/no/1/0 become booleans."""
    assert load_local_config().set("node.restrict_to_workspace", raw) is expected


def test_workspace_is_stored_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative workspace path is stored as an absolute one."""
    monkeypatch.chdir(tmp_path)
    assert load_local_config().set("node.workspace", "ws") == str(tmp_path / "ws")


def test_unknown_key_is_refused_with_the_known_keys() -> None:
    """Setting an unknown key names it and lists the known keys."""
    with pytest.raises(InvalidParams) as caught:
        load_local_config().set("gateway.ulr", "ws://x/ws")
    assert "gateway.ulr" in caught.value.message
    assert "gateway.url" in caught.value.message and "node.workspace" in caught.value.message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("node.restrict_to_workspace", "maybe"),
        ("node.restrict_to_workspace", 3),
        ("gateway.url", "http://127.0.0.1:8787"),
        ("gateway.url", 8787),
        ("node.id", ""),
        ("session.default_key", ["a"]),
    ],
)
def test_bad_values_are_refused(key: str, value: object) -> None:
    """A value of the wrong type or shape is InvalidParams naming the key."""
    with pytest.raises(InvalidParams, match=key.replace(".", r"\.")):
        load_local_config().set(key, value)


def test_secret_keys_cannot_be_written_to_the_file() -> None:
    """LocalConfig.set refuses gateway.token: tokens never land in config.toml."""
    with pytest.raises(InvalidParams, match="secret"):
        load_local_config().set("gateway.token", "abc")


def test_invalid_toml_is_reported_with_the_path() -> None:
    """A broken config.toml raises InvalidParams naming the file."""
    path = _write_config("[gateway\nurl = ")
    with pytest.raises(InvalidParams, match="not valid TOML") as caught:
        load_local_config()
    assert str(path) in caught.value.message


def test_unset_restores_the_default() -> None:
    """Unsetting a key removes it from the file; the default applies again."""
    _write_config(COMMENTED)
    config = load_local_config()
    assert config.unset("gateway.url") is True
    assert config.unset("gateway.url") is False
    config.save()
    assert load_local_config().get("gateway.url") == DEFAULT_GATEWAY_URL
    with pytest.raises(InvalidParams):
        config.unset("no.such")


def test_secret_key_detection() -> None:
    """Token/secret/password/API-key names are secrets; counts and URLs are not."""
    assert is_secret_key("gateway.token")
    assert is_secret_key("cloudflare.api_token")
    assert is_secret_key("r2.secret_access_key")
    assert is_secret_key("x.apiKey")
    assert not is_secret_key("gateway.url")
    assert not is_secret_key("model.max_tokens")


@pytest.mark.parametrize(
    ("value", "masked"),
    [("abcdefghijkl", "abcd...ijkl"), ("abcdefghijk", "****"), ("", "****")],
)
def test_mask_secret(value: str, masked: str) -> None:
    """12+ characters show the first and last four; shorter values are fully hidden."""
    assert mask_secret(value) == masked


def test_generated_tokens_are_long_and_distinct() -> None:
    """generate_token gives 43 URL-safe characters, different each time."""
    first, second = generate_token(), generate_token()
    assert first != second and len(first) == 43


def test_set_secret_uses_the_keyring(memory_keyring: MemoryKeyring) -> None:
    """With a working keyring the secret goes there and no file is written."""
    where = set_secret("gateway.token", "tok-in-keyring-123")
    assert "keyring" in where
    assert memory_keyring.store[(keyring_service(), "gateway.token")] == "tok-in-keyring-123"
    assert not resolve_paths().secrets_file.exists()
    found = find_secret("gateway.token")
    assert found is not None and (found.value, found.source) == ("tok-in-keyring-123", "keyring")


def test_each_gsv_home_has_its_own_keyring_service(
    memory_keyring: MemoryKeyring, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second GSV_HOME on the machine (a test instance) must not read or overwrite the
    first one's owner token: each home keys its secrets by its own service name."""
    monkeypatch.setenv("GSV_HOME", str(tmp_path / "first"))
    set_secret("gateway.token", "first-token-123456")
    monkeypatch.setenv("GSV_HOME", str(tmp_path / "second"))
    assert get_secret("gateway.token") is None
    set_secret("gateway.token", "second-token-123456")
    monkeypatch.setenv("GSV_HOME", str(tmp_path / "first"))
    assert get_secret("gateway.token") == "first-token-123456"
    assert keyring_service() == f"gsv:{(tmp_path / 'first').resolve()}"
    monkeypatch.delenv("GSV_HOME")
    assert keyring_service() == "gsv"  # the default home keeps the service it always had


@pytest.mark.usefixtures("no_keyring")
def test_set_secret_falls_back_to_a_0600_file() -> None:
    """With no usable keyring the secret goes to secrets.toml, mode 0600, and says so."""
    where = set_secret("gateway.token", "tok-in-file-12345")
    path = resolve_paths().secrets_file
    assert str(path) in where and "no usable keyring" in where
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert get_secret("gateway.token") == "tok-in-file-12345"
    found = find_secret("gateway.token")
    assert found is not None and found.source == "file"
    assert not resolve_paths().config_file.exists()


@pytest.mark.usefixtures("no_keyring")
def test_rewriting_the_secrets_file_keeps_it_0600() -> None:
    """A second secret rewrites the file atomically and it stays 0600 with both values."""
    set_secret("gateway.token", "first-token-value")
    set_secret("channels.whatsapp.token", "second-token-value")
    path = resolve_paths().secrets_file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert get_secret("gateway.token") == "first-token-value"
    assert get_secret("channels.whatsapp.token") == "second-token-value"
    assert not list(path.parent.glob("*.tmp"))


def test_env_beats_keyring_beats_file_beats_config(
    memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lookup order: GSV_TOKEN, then the keyring, then secrets.toml, then config.toml."""
    _write_config('[gateway]\ntoken = "from-config"\n')
    assert (found := find_secret("gateway.token")) is not None and found.source == "config"
    secrets_file = resolve_paths().secrets_file
    secrets_file.write_text('[gateway]\ntoken = "from-file"\n')
    assert get_secret("gateway.token") == "from-file"
    memory_keyring.store[(keyring_service(), "gateway.token")] = "from-keyring"
    assert get_secret("gateway.token") == "from-keyring"
    monkeypatch.setenv("GSV_TOKEN", "from-env")
    assert get_secret("gateway.token") == "from-env"
    monkeypatch.setenv("GSV_TOKEN", "  ")
    assert get_secret("gateway.token") == "from-keyring"


def test_storing_a_secret_removes_plain_copies(memory_keyring: MemoryKeyring) -> None:
    """set_secret moves a legacy plain token out of config.toml and the secrets file."""
    config_path = _write_config('# keep me\n[gateway]\ntoken = "old-plain"\nurl = "ws://h/ws"\n')
    resolve_paths().secrets_file.write_text('[gateway]\ntoken = "old-file"\n')
    set_secret("gateway.token", "new-token-value")
    text = config_path.read_text()
    assert "old-plain" not in text and "# keep me" in text and 'url = "ws://h/ws"' in text
    assert "old-file" not in resolve_paths().secrets_file.read_text()
    assert get_secret("gateway.token") == "new-token-value"


def test_empty_secret_is_refused() -> None:
    """An empty or blank secret is InvalidParams and nothing is stored."""
    with pytest.raises(InvalidParams):
        set_secret("gateway.token", "  ")
    assert get_secret("gateway.token") is None


def test_delete_secret_clears_every_store(memory_keyring: MemoryKeyring) -> None:
    """delete_secret removes the keyring entry, the file entry and a legacy config value."""
    _write_config('[gateway]\ntoken = "plain"\n')
    resolve_paths().secrets_file.write_text('[gateway]\ntoken = "filed"\n')
    memory_keyring.store[(keyring_service(), "gateway.token")] = "kept"
    assert delete_secret("gateway.token") == ["keyring", "file", "config"]
    assert get_secret("gateway.token") is None
    assert delete_secret("gateway.token") == []


@pytest.mark.usefixtures("no_keyring")
def test_a_failing_keyring_is_skipped_on_read() -> None:
    """A keyring that raises on every call does not break lookups of the file value."""
    resolve_paths().config_dir.mkdir(parents=True)
    resolve_paths().secrets_file.write_text('[gateway]\ntoken = "filed"\n')
    assert get_secret("gateway.token") == "filed"
    assert delete_secret("gateway.token") == ["file"]


def test_initial_config_has_sections_and_refuses_to_overwrite() -> None:
    """write_initial_config writes commented sections and will not overwrite by default."""
    path = write_initial_config("wss://gw.example.org/ws")
    text = path.read_text()
    for section in ("[gateway]", "[node]", "[session]"):
        assert section in text
    assert text.count("#") >= 6
    assert load_local_config().get("gateway.url") == "wss://gw.example.org/ws"
    with pytest.raises(Conflict, match="already exists"):
        write_initial_config()
    assert path.read_text() == text
    write_initial_config(overwrite=True)
    assert load_local_config().get("gateway.url") == DEFAULT_GATEWAY_URL


def test_initial_config_validates_the_url_before_writing() -> None:
    """A bad --url is refused and no file is written."""
    with pytest.raises(InvalidParams):
        write_initial_config("localhost:8787")
    assert not resolve_paths().config_file.exists()


def test_describe_masks_secrets_and_names_sources(memory_keyring: MemoryKeyring) -> None:
    """describe() lists known keys and extra file keys, secrets masked, with sources."""
    _write_config('[node]\nid = "box"\n[cloudflare]\napi_token = "cf-secret-value-123"\n')
    memory_keyring.store[(keyring_service(), "gateway.token")] = "abcdefghijklmnop"
    rows = {row.key: row for row in load_local_config().describe()}
    assert (rows["gateway.url"].value, rows["gateway.url"].source) == (
        DEFAULT_GATEWAY_URL,
        "default",
    )
    assert (rows["gateway.token"].value, rows["gateway.token"].source) == ("abcd...mnop", "keyring")
    assert (rows["node.id"].value, rows["node.id"].source) == ("box", "config")
    assert rows["node.workspace"].source == "unset"
    assert rows["cloudflare.api_token"].value == "cf-s...-123"


@pytest.mark.parametrize(
    "backend", ["keyring.backends.null.Keyring", "keyring.backends.fail.Keyring"]
)
def test_a_keyring_that_keeps_nothing_falls_back_to_the_file(backend: str) -> None:
    """keyring's null backend (how people turn keyrings off) takes a secret without error
    and keeps nothing; the fail backend raises. Either way the secret is written to the
    0600 file and reads back (issue 40.0), through the CLI as a user would run it."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHON_KEYRING_BACKEND": backend}
    stored = subprocess.run([sys.executable, "-m", "gsv_cli", "init", "--token", "tok-0123456789abcdef"],
                            env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    said = stored.stdout + stored.stderr
    assert "stored gateway.token in the system keyring" not in said
    assert "secrets.toml" in said
    read = subprocess.run([sys.executable, "-m", "gsv_cli", "local-config", "get", "gateway.token",
                           "--reveal"], env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert read.returncode == 0 and "tok-0123456789abcdef" in read.stdout
