"""`gsv init` and `gsv local-config`, through typer's CliRunner (and one real subprocess),
plus how CliState resolves the gateway URL and token."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_cli.state import CliState
from gsv_core.defaults import DEFAULT_GATEWAY_URL
from gsv_core.localconfig import get_secret
from gsv_core.localconfig import keyring_service
from gsv_core.localconfig import load_local_config
from gsv_core.localconfig import set_secret
from gsv_core.paths import resolve_paths
from tests.fakes.memory_keyring import MemoryKeyring


def gsv(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def config_text() -> str:
    return resolve_paths().config_file.read_text()


# --- gsv init -----------------------------------------------------------------------------


def test_init_writes_a_commented_config_and_prints_its_path() -> None:
    """`gsv init` writes config.toml with gateway, node and session sections."""
    result = gsv("init")
    assert result.exit_code == 0, result.stderr
    path = resolve_paths().config_file
    assert str(path) in result.stdout
    text = config_text()
    assert "[gateway]" in text and "[node]" in text and "[session]" in text
    assert load_local_config().get("gateway.url") == DEFAULT_GATEWAY_URL


def test_init_refuses_to_overwrite_without_force() -> None:
    """A second `gsv init` exits 1 with an error on stderr and leaves the file alone."""
    assert gsv("init", "--url", "ws://10.0.0.5:8787/ws").exit_code == 0
    before = config_text()
    result = gsv("init")
    assert result.exit_code == 1
    assert "already exists" in result.stderr and "--force" in result.stderr
    assert result.stdout == ""
    assert config_text() == before


def test_init_force_overwrites() -> None:
    """`gsv init --force` replaces an existing file."""
    assert gsv("init", "--url", "ws://10.0.0.5:8787/ws").exit_code == 0
    result = gsv("init", "--force", "--url", "wss://gw.example.org/ws")
    assert result.exit_code == 0, result.stderr
    assert load_local_config().get("gateway.url") == "wss://gw.example.org/ws"


def test_init_generate_token_stores_it_outside_the_config(memory_keyring: MemoryKeyring) -> None:
    """--generate-token puts a token in the keyring, not config.toml, and says where."""
    result = gsv("init", "--generate-token")
    assert result.exit_code == 0, result.stderr
    token = get_secret("gateway.token")
    assert token is not None and len(token) >= 32
    assert memory_keyring.store[(keyring_service(), "gateway.token")] == token
    assert token not in config_text() and "token =" not in config_text()
    assert "keyring" in result.stdout and "gsv gateway run" in result.stdout
    assert token not in result.stdout


def test_init_token_stores_the_given_token() -> None:
    """--token stores exactly the value given."""
    result = gsv("init", "--token", "my-own-token-value")
    assert result.exit_code == 0, result.stderr
    assert get_secret("gateway.token") == "my-own-token-value"
    assert "my-own-token-value" not in config_text()


def test_init_json_reports_path_and_token_location() -> None:
    """`gsv --json init --generate-token` prints the config path and where the token went."""
    result = gsv("--json", "init", "--generate-token")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["config"] == str(resolve_paths().config_file)
    assert "keyring" in data["token"]


def test_init_token_options_are_exclusive() -> None:
    """--token with --generate-token is a usage error (exit 2) and writes nothing."""
    result = gsv("init", "--generate-token", "--token", "abc")
    assert result.exit_code == 2
    assert not resolve_paths().config_file.exists()
    assert get_secret("gateway.token") is None


def test_init_refuses_a_bad_url() -> None:
    """A non-WebSocket --url exits 1 with the reason on stderr and writes nothing."""
    result = gsv("init", "--url", "http://127.0.0.1:8787")
    assert result.exit_code == 1
    assert "ws://" in result.stderr
    assert not resolve_paths().config_file.exists()


def test_init_in_a_subprocess_without_keyring_uses_the_0600_file(gsv_home: Path) -> None:
    """A real `gsv init --generate-token` with no usable keyring writes secrets.toml 0600,
    and `local-config get --reveal` in another process reads the same token back."""
    env = {**os.environ, "GSV_HOME": str(gsv_home)}
    done = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "init", "--generate-token"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    secrets_file = resolve_paths().secrets_file
    assert str(secrets_file) in done.stdout and "no usable keyring" in done.stdout
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    token = get_secret("gateway.token")  # the in-memory keyring is empty: read from the file
    assert token is not None and token not in config_text()
    shown = subprocess.run(
        [sys.executable, "-m", "gsv_cli", "local-config", "get", "gateway.token", "--reveal"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == token


# --- gsv local-config ---------------------------------------------------------------------


def test_show_masks_secrets_and_lists_sources() -> None:
    """`local-config show` lists every key with its source; the token shows masked."""
    set_secret("gateway.token", "abcdefghijklmnopqrst")
    result = gsv("local-config", "show")
    assert result.exit_code == 0, result.stderr
    assert "abcd...qrst" in result.stdout and "abcdefghijklmnopqrst" not in result.stdout
    for key in ("gateway.url", "node.workspace", "session.default_key", "keyring", "default"):
        assert key in result.stdout


@pytest.mark.parametrize(
    "argv", [["local-config", "show", "--json"], ["--json", "local-config", "show"]]
)
def test_show_json_is_a_flat_masked_dict(argv: list[str]) -> None:
    """Both `show --json` and the global `--json` print key -> value, secrets masked."""
    assert gsv("local-config", "set", "node.id", "box").exit_code == 0
    set_secret("gateway.token", "abcdefghijklmnopqrst")
    result = gsv(*argv)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["node.id"] == "box"
    assert data["gateway.url"] == DEFAULT_GATEWAY_URL
    assert data["gateway.token"] == "abcd...qrst"
    assert data["node.workspace"] is None


def test_set_then_get_round_trips_with_comments_kept() -> None:
    """`set` coerces and saves (comments survive); `get` prints the plain value."""
    assert gsv("init").exit_code == 0
    result = gsv("local-config", "set", "node.restrict_to_workspace", "yes")
    assert result.exit_code == 0, result.stderr
    assert "# Gateway to talk to" in config_text()
    got = gsv("local-config", "get", "node.restrict_to_workspace")
    assert (got.exit_code, got.stdout) == (0, "true\n")
    as_json = gsv("--json", "local-config", "get", "gateway.url")
    assert json.loads(as_json.stdout) == DEFAULT_GATEWAY_URL


def test_set_unknown_key_fails_listing_known_keys() -> None:
    """An unknown key exits 1 with the known keys on stderr; nothing is written."""
    result = gsv("local-config", "set", "gateway.ulr", "ws://x/ws")
    assert result.exit_code == 1
    assert "gateway.ulr" in result.stderr and "gateway.url" in result.stderr
    assert not resolve_paths().config_file.exists()


def test_set_bad_type_fails() -> None:
    """A non-boolean for a boolean key exits 1 with the key named on stderr."""
    result = gsv("local-config", "set", "node.restrict_to_workspace", "perhaps")
    assert result.exit_code == 1
    assert "node.restrict_to_workspace" in result.stderr


def test_set_token_goes_to_the_secret_store(memory_keyring: MemoryKeyring) -> None:
    """`set gateway.token` stores in the keyring, never in config.toml."""
    assert gsv("init").exit_code == 0
    result = gsv("local-config", "set", "gateway.token", "secret-token-1234")
    assert result.exit_code == 0, result.stderr
    assert memory_keyring.store[(keyring_service(), "gateway.token")] == "secret-token-1234"
    assert "secret-token-1234" not in config_text()


def test_get_secret_is_masked_unless_revealed() -> None:
    """`get gateway.token` masks; `--reveal` prints the value."""
    set_secret("gateway.token", "abcdefghijklmnopqrst")
    assert gsv("local-config", "get", "gateway.token").stdout == "abcd...qrst\n"
    revealed = gsv("local-config", "get", "gateway.token", "--reveal")
    assert revealed.stdout == "abcdefghijklmnopqrst\n"


def test_get_unset_key_exits_1() -> None:
    """A key with no value and no default is an error on stderr, exit 1."""
    result = gsv("local-config", "get", "node.id")
    assert result.exit_code == 1
    assert "node.id is not set" in result.stderr and result.stdout == ""
    token = gsv("local-config", "get", "gateway.token")
    assert token.exit_code == 1 and "not set" in token.stderr


def test_unset_removes_values_and_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """`unset` restores a default; for a secret it clears the store and notes the env var."""
    assert gsv("local-config", "set", "gateway.url", "ws://10.1.1.1:8787/ws").exit_code == 0
    assert gsv("local-config", "unset", "gateway.url").exit_code == 0
    assert load_local_config().get("gateway.url") == DEFAULT_GATEWAY_URL
    set_secret("gateway.token", "abcdefghijklmnopqrst")
    monkeypatch.setenv("GSV_TOKEN", "from-env-token")
    result = gsv("local-config", "unset", "gateway.token")
    assert result.exit_code == 0, result.stderr
    assert "keyring" in result.stdout and "GSV_TOKEN" in result.stderr
    monkeypatch.delenv("GSV_TOKEN")
    assert get_secret("gateway.token") is None
    assert gsv("local-config", "unset", "no.such.key").exit_code == 1


def test_path_prints_the_config_file() -> None:
    """`path` prints config.toml's location; with --json also the secrets file."""
    paths = resolve_paths()
    assert gsv("local-config", "path").stdout == f"{paths.config_file}\n"
    data = json.loads(gsv("local-config", "path", "--json").stdout)
    assert data == {"config": str(paths.config_file), "secrets": str(paths.secrets_file)}


def test_broken_config_is_a_clean_error() -> None:
    """Invalid TOML gives a red error naming the file and exit 1, not a traceback."""
    path = resolve_paths().config_file
    path.parent.mkdir(parents=True)
    path.write_text("[gateway\n")
    result = gsv("local-config", "show")
    assert result.exit_code == 1
    assert "not valid TOML" in result.stderr and "Traceback" not in result.stderr


# --- CliState resolution ------------------------------------------------------------------


def test_url_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """URL: --url flag, then GSV_URL, then local config gateway.url, then the default."""
    assert CliState().url() == DEFAULT_GATEWAY_URL
    config = load_local_config()
    config.set("gateway.url", "ws://from-config:1/ws")
    config.save()
    assert CliState().url() == "ws://from-config:1/ws"
    monkeypatch.setenv("GSV_URL", "ws://from-env:2/ws")
    assert CliState().url() == "ws://from-env:2/ws"
    assert CliState(url_flag="ws://from-flag:3/ws").url() == "ws://from-flag:3/ws"


def test_token_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Token: --token flag, then GSV_TOKEN, then the secret store, else None."""
    assert CliState().token() is None
    set_secret("gateway.token", "from-store-token")
    assert CliState().token() == "from-store-token"
    monkeypatch.setenv("GSV_TOKEN", "from-env-token")
    assert CliState().token() == "from-env-token"
    assert CliState(token_flag="from-flag-token").token() == "from-flag-token"
