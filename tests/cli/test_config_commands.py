"""`gsv config get|set` against a real gateway (in a thread): values, masking, errors, auth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from gsv_core.localconfig import set_secret
from tests.threaded import threaded_gateway


def gsv(url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], env=env)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunningGateway]:
    with threaded_gateway(tmp_path / "gsv.db") as running:
        yield running


def test_get_without_a_path_prints_the_whole_config_as_json(live: RunningGateway) -> None:
    """`gsv config get` prints the effective config, defaults included."""
    result = gsv(live.url, "config", "get")
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    assert config["model"]["provider"] == "anthropic"
    assert config["timeouts"]["toolMs"] == 60000


def test_set_parses_json_and_falls_back_to_strings(live: RunningGateway) -> None:
    """VALUE is JSON when it parses (numbers, objects), else a plain string."""
    assert gsv(live.url, "config", "set", "timeouts.toolMs", "90000").exit_code == 0
    assert gsv(live.url, "config", "get", "timeouts.toolMs").stdout.strip() == "90000"
    assert gsv(live.url, "config", "set", "model.id", "gpt-5").exit_code == 0
    assert gsv(live.url, "config", "get", "model.id").stdout.strip() == "gpt-5"
    as_json = gsv(live.url, "--json", "config", "get", "model.id")
    assert json.loads(as_json.stdout) == "gpt-5"


def test_secrets_are_masked_in_every_read(live: RunningGateway) -> None:
    """A stored API key reads back as *** by path and in the whole config."""
    assert gsv(live.url, "config", "set", "apiKeys.openai", "sk-secret-value").exit_code == 0
    assert gsv(live.url, "config", "get", "apiKeys.openai").stdout.strip() == "***"
    whole = gsv(live.url, "config", "get")
    assert "sk-secret-value" not in whole.stdout
    assert json.loads(whole.stdout)["apiKeys"]["openai"] == "***"


def test_bad_values_exit_1_naming_the_field(live: RunningGateway) -> None:
    """A type error is refused with a message naming the field; the value is unchanged."""
    result = gsv(live.url, "config", "set", "timeouts.toolMs", '"soon"')
    assert result.exit_code == 1
    assert "timeouts.toolMs" in result.stderr
    assert gsv(live.url, "config", "get", "timeouts.toolMs").stdout.strip() == "60000"


def test_null_restores_the_default(live: RunningGateway) -> None:
    """`gsv config set PATH null` removes the override."""
    gsv(live.url, "config", "set", "model.id", "other")
    assert gsv(live.url, "config", "set", "model.id", "null").exit_code == 0
    assert gsv(live.url, "config", "get", "model.id").stdout.strip() == "claude-sonnet-4-20250514"


def test_missing_paths_exit_1(live: RunningGateway) -> None:
    """Reading a path with no value says so on stderr and exits 1."""
    result = gsv(live.url, "config", "get", "model.nope")
    assert result.exit_code == 1
    assert "no config value at model.nope" in result.stderr


def test_a_gateway_with_a_token_needs_it(tmp_path: Path) -> None:
    """A wrong token: exit 1 with Unauthorized; with --token or GSV_TOKEN: it works; with
    none, the CLI reads auth.token from the secret store it shares with the gateway."""
    set_secret("gateway.token", "sesame")  # the owner's own token, adopted at first start
    with threaded_gateway(tmp_path / "t.db") as gw:
        refused = gsv(gw.url, "--token", "wrong", "config", "get", "model.id")
        assert refused.exit_code == 1 and "Unauthorized" in refused.stderr
        assert gsv(gw.url, "config", "get", "model.id").exit_code == 0
        by_flag = CliRunner().invoke(
            app, ["--url", gw.url, "--token", "sesame", "config", "get", "model.id"]
        )
        assert by_flag.exit_code == 0
        by_env = gsv(gw.url, "config", "get", "model.id", env={"GSV_TOKEN": "sesame"})
        assert by_env.exit_code == 0
