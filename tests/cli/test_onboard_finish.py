"""The optional last steps of `gsv onboard`: a messenger connected (Telegram against the
fake Bot API on 127.0.0.1; its token from an environment variable or a hidden prompt,
never shown) and the gateway and node installed as user services (unit files written,
no service manager run)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from gsv_core.gateway.server import RunningGateway
from tests.cli.test_onboard_command import config_value
from tests.cli.test_onboard_command import gsv
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.fakes.telegram_api import fake_telegram_api


@pytest.fixture
def model() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        server.models = ["m-1"]
        server.enqueue(reply("OK"))
        yield server


@pytest.fixture
def telegram(live: RunningGateway) -> Iterator[FakeTelegramAPI]:
    """The fake Bot API, with the gateway's telegram channel pointed at it."""
    with fake_telegram_api() as api:
        settings = f'{{"apiBaseUrl": "{api.url}", "pollTimeout": 1}}'
        assert gsv(live.url, "config", "set", "channels.telegram", settings).exit_code == 0
        yield api
        gsv(live.url, "channels", "stop", "telegram")


def onboard(
    live: RunningGateway, model: FakeLLMServer, *extra: str,
    input: str | None = None, env: dict[str, str] | None = None,
) -> Result:  # fmt: skip
    return gsv(live.url, "onboard", "--provider", "local", "--base-url", model.openai_base_url,
               *extra, input=input, env=env)  # fmt: skip


def test_a_messenger_connects_with_its_token_from_the_environment(
    live: RunningGateway, model: FakeLLMServer, telegram: FakeTelegramAPI
) -> None:
    env = {"TG_TOKEN": telegram.token}
    done = onboard(live, model, "--yes", "--messenger", "telegram",
                   "--messenger-token-env", "TG_TOKEN", env=env)  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "telegram connected" in done.stdout
    assert telegram.token not in done.output
    status = gsv(live.url, "--json", "channels", "status", "telegram")
    assert '"connected": true' in status.stdout
    assert telegram.token not in json.dumps(config_value(live.url, "channels"))


def test_people_type_the_token_hidden(
    live: RunningGateway, model: FakeLLMServer, telegram: FakeTelegramAPI
) -> None:
    """Asked: messenger 2 (telegram), the token at a hidden prompt, no services."""
    done = onboard(live, model, "--ask", "--model", "m-1",
                   input=f"2\n{telegram.token}\nn\n")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "telegram connected" in done.stdout
    assert telegram.token not in done.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--messenger", "telegram"], "telegram needs its bot token"),
        (["--messenger", "icq"], "unknown messenger 'icq'"),
        (["--messenger", "telegram", "--messenger-token-env", "NOT_SET_ANYWHERE"],
         "NOT_SET_ANYWHERE is empty or not set"),
    ],
)  # fmt: skip
def test_a_messenger_without_what_it_needs_says_what_to_pass(
    live: RunningGateway, model: FakeLLMServer, extra: list[str], message: str
) -> None:
    done = onboard(live, model, "--yes", *extra)
    assert done.exit_code == 1
    assert message in " ".join(done.stderr.split())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd units on Linux")
def test_install_services_writes_the_gateway_and_node_units(
    live: RunningGateway, model: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty-bin").mkdir()  # no systemctl: the units are written, not started
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    done = onboard(live, model, "--yes", "--install-services")
    assert done.exit_code == 0, done.output
    units = tmp_path / "xdg-config/systemd/user"
    assert (units / "gsv-gateway.service").is_file() and (units / "gsv-node.service").is_file()
    assert f"Environment=GSV_HOME={os.environ['GSV_HOME']}" in (
        units / "gsv-node.service").read_text()  # fmt: skip
