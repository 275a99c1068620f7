"""Config refusals in words a person reads (issue 40.7), through `gsv config set` against
a real gateway: each names the key, what it expects and an example, never pydantic's
type names."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("model", "gpt-5", ["model is a section", "gsv config set model.id VALUE"]),
        ("budget.daily", "lots", ["budget.daily expects a number", "or false",
                                  "gsv config set budget.daily"]),
        ("gateway.port", "abc", ["gateway.port is not a gateway config key",
                                 "gsv gateway start --port N"]),
        ("session.dmScop", "main", ["did you mean session.dmScope?"]),
        ("session.dmScope", "everyone", ["expects one of main, per-peer",
                                         "gsv config set session.dmScope main"]),
        ("toolApproval.maxCommandBytes", "5", ["expects a number (at least 1024"]),
        ("providers.local.toolCalls", "json", ["providers.local.toolCalls expects one of "
                                               "native, text, off",
                                               "gsv config set providers.local.toolCalls native"]),
        ("providers.local.toolCalls", "true", ["providers.local.toolCalls expects one of "
                                               "native, text, off"]),
        ("providers.local.toolcalls", "text", ["did you mean providers.local.toolCalls?"]),
    ],
)  # fmt: skip
def test_a_refusal_names_the_key_what_it_expects_and_an_example(
    live: RunningGateway, path: str, value: str, said: list[str]
) -> None:
    result = CliRunner().invoke(app, ["--url", live.url, "config", "set", path, value])
    text = " ".join(result.stderr.split())
    assert result.exit_code == 1
    for words in said:
        assert words in text, text
    for pydantic in ("constrained-float", "instance of", "Input should be", "ModelConfig"):
        assert pydantic not in text
