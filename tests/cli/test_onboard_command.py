"""`gsv onboard` end to end against a fake OpenAI-compatible provider on 127.0.0.1 (the
official SDK speaks HTTP to it): flags for scripts, prompts for people, a refused key and
an unreachable URL each said in one sentence with the fix; the key never echoed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as server:
        server.models = ["mini-1", "llama3.1:8b"]
        yield server


def gsv(
    url: str, *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], input=input, env=env)


def config_value(url: str, path: str) -> object:
    return json.loads(gsv(url, "--json", "config", "get", path).stdout)


def test_flags_set_up_a_custom_provider_and_test_it(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    llm.enqueue(reply("OK"))
    done = gsv(live.url, "onboard", "--provider", "local", "--base-url", llm.openai_base_url,
               "--yes")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "model: local/llama3.1:8b" in done.stdout  # the preferred default among the list
    assert "test call ok (" in done.stdout and "): OK" in done.stdout
    assert "budget: background work" in " ".join(done.stderr.split())  # the default cap, said
    assert config_value(live.url, "model") == {"provider": "local", "id": "llama3.1:8b"}
    # the test call (16 tokens), then the probe of how the model calls tools
    test_call = next(r.body for r in llm.requests if r.body.get("max_completion_tokens") == 16)
    assert test_call["model"] == "llama3.1:8b" and llm.last_body["model"] == "llama3.1:8b"


def test_a_key_from_the_environment_is_stored_not_shown(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    llm.api_key = "sk-onboard-secret-123456"
    llm.enqueue(reply("OK"))
    done = gsv(live.url, "onboard", "-p", "local", "--base-url", llm.openai_base_url,
               "--key-env", "MY_KEY", "--model", "mini-1", "--yes",
               env={"MY_KEY": "sk-onboard-secret-123456"})  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "key stored for local (not shown)" in done.stdout
    assert "sk-onboard-secret-123456" not in done.output
    assert config_value(live.url, "providers.local.apiKey") == "***"


def test_people_are_asked_and_the_key_is_hidden(live: RunningGateway, llm: FakeLLMServer) -> None:
    """The prompts in order: provider number, key (hidden), model (default offered)."""
    llm.enqueue(reply("OK"))
    provider = json.dumps({"api": "openai", "baseUrl": llm.openai_base_url})
    assert gsv(live.url, "config", "set", "providers.openai", provider).exit_code == 0
    # 2 = openai in the list; the key; Enter takes the default model, no messenger, and
    # no services
    done = gsv(live.url, "onboard", "--ask", input="2\nsk-typed-secret-7890\n\n\n\n")
    assert done.exit_code == 0, done.output
    assert "sk-typed-secret-7890" not in done.output
    assert "openai API key (hidden)" in done.output
    assert config_value(live.url, "model") == {"provider": "openai", "id": "llama3.1:8b"}
    assert config_value(live.url, "apiKeys.openai") == "***"


def test_a_refused_key_says_how_to_fix_it(live: RunningGateway, llm: FakeLLMServer) -> None:
    llm.api_key = "sk-right"
    done = gsv(live.url, "onboard", "-p", "local", "--base-url", llm.openai_base_url,
               "--key-env", "MY_KEY", "--yes", env={"MY_KEY": "sk-wrong"})  # fmt: skip
    assert done.exit_code == 1
    assert "refused the API key (401)" in done.stderr and "sk-wrong" not in done.output


def test_an_unreachable_url_and_missing_answers(live: RunningGateway) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gone = gsv(live.url, "onboard", "-p", "far", "--base-url", f"http://127.0.0.1:{port}/v1",
               "--yes")  # fmt: skip
    assert gone.exit_code == 1 and "cannot reach provider" in gone.stderr
    no_key = gsv(live.url, "onboard", "-p", "anthropic", "--yes")
    assert no_key.exit_code == 1 and "--key-env" in no_key.stderr
    bad_url = gsv(live.url, "onboard", "-p", "x", "--base-url", "ftp://h/v1", "--yes")
    assert bad_url.exit_code == 1 and "http(s) URL" in bad_url.stderr
    assert "Traceback" not in gone.output + no_key.output + bad_url.output


def test_a_failing_test_call_is_reported(live: RunningGateway, llm: FakeLLMServer) -> None:
    llm.enqueue(ErrorReply(400, "model mini-1 is not loaded"))
    done = gsv(live.url, "onboard", "-p", "local", "--base-url", llm.openai_base_url,
               "-m", "mini-1", "--yes")  # fmt: skip
    assert done.exit_code == 1
    assert "the test call failed" in done.stderr and "not loaded" in done.stderr


def test_a_failed_setup_leaves_a_working_one_as_it_was(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    """Issue 40.1: a working `custom` provider, then an onboard of the same name at a URL
    that does not answer, and one whose test call fails: each fails saying nothing was
    saved, and the working URL and model are still there."""
    llm.enqueue(reply("OK"))
    working = gsv(live.url, "onboard", "--provider", "custom", "--base-url", llm.openai_base_url,
                  "--model", "mini-1", "--yes")  # fmt: skip
    assert working.exit_code == 0, working.output
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    broken = gsv(live.url, "onboard", "--provider", "custom", "--base-url",
                 f"http://127.0.0.1:{port}/v1", "--yes")  # fmt: skip
    assert broken.exit_code == 1 and "cannot reach provider" in broken.stderr
    llm.enqueue(ErrorReply(400, "model llama3.1:8b is not loaded"))
    failing = gsv(live.url, "onboard", "--provider", "custom", "--base-url",
                  llm.openai_base_url + "/", "--model", "llama3.1:8b", "--yes")  # fmt: skip
    assert failing.exit_code == 1 and "nothing was saved" in failing.stderr
    assert config_value(live.url, "providers.custom.baseUrl") == llm.openai_base_url
    assert config_value(live.url, "model") == {"provider": "custom", "id": "mini-1"}


def test_custom_asks_for_its_url_and_a_typo_is_named(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    """Issue 40.2: choosing `custom` asks for the URL there (no dead end), and
    `--provider anthropc` says "did you mean anthropic" instead of taking it as custom."""
    llm.enqueue(reply("OK"))
    # 6 = custom; its URL; Enter takes the default model; no messenger, no services
    done = gsv(live.url, "onboard", "--ask", input=f"6\n{llm.openai_base_url}\n\n\n\n")
    assert done.exit_code == 0, done.output
    assert "its OpenAI-compatible URL" in done.output
    assert config_value(live.url, "providers.custom.baseUrl") == llm.openai_base_url
    typo = gsv(live.url, "onboard", "--provider", "anthropc", "--yes")
    assert typo.exit_code == 1 and "did you mean anthropic?" in typo.stderr
