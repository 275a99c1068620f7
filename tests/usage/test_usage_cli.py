"""`gsv usage` and `/usage` against a gateway whose model is the fake LLM server behind
the official SDKs: streamed usage (with Anthropic cache reads and OpenAI cached tokens)
lands in the ledger priced by the table; the table, `--json` and bad options."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from gsv_core.usage.prices import BUILTIN
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import reply
from tests.fakes.prompt_cache import PromptCache


def gsv(live: RunningGateway, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--url", live.url, *args])
    return result.exit_code, result.stdout, result.stderr


def use(live: RunningGateway, api: str, base_url: str, model: str) -> None:
    provider = json.dumps({"api": api, "baseUrl": base_url})
    for path, value in (("providers.fake", provider),
                        ("model", json.dumps({"provider": "fake", "id": model}))):  # fmt: skip
        assert gsv(live, "config", "set", path, value)[0] == 0


def ledger(live: RunningGateway, *args: str) -> dict[str, object]:
    code, out, err = gsv(live, "usage", "--json", *args)
    assert code == 0, err
    report: dict[str, object] = json.loads(out)
    return report


def test_anthropic_cache_reads_are_priced_at_the_cache_rate(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    use(live, "anthropic", llm.anthropic_base_url, "claude-sonnet-4-test")
    llm.prompt_cache = PromptCache(min_tokens=1)
    for turn in range(2):
        llm.enqueue(reply(f"Answer {turn}.", usage=(0, 7)))
        assert gsv(live, "chat", f"question {turn}")[0] == 0
    report = ledger(live, "--by", "model")
    (group,) = report["groups"]  # type: ignore[misc]
    second = llm.requests[1].cache_usage
    assert second is not None and second.cache_read > 0
    assert group["cacheRead"] == second.cache_read  # the first call only wrote
    price = BUILTIN["claude-sonnet-4"]
    plain = group["input"] - group["cacheRead"] - group["cacheWrite"]
    expected = (plain * price.input + group["cacheRead"] * price.cache_read
                + group["cacheWrite"] * price.cache_write + 14 * price.output) / 1e6  # fmt: skip
    assert group["output"] == 14
    assert group["costUsd"] == pytest.approx(expected, rel=1e-4)


def test_openai_streamed_usage_and_cached_tokens_reach_the_ledger(
    live: RunningGateway, llm: FakeLLMServer
) -> None:
    use(live, "openai", llm.openai_base_url, "gpt-4o-mini")
    llm.enqueue(reply("Hi.", usage=(1200, 30), cache_read=1000))
    assert gsv(live, "chat", "hi")[0] == 0
    (group,) = ledger(live, "--by", "model")["groups"]  # type: ignore[misc]
    assert (group["name"], group["input"], group["output"], group["cacheRead"]) == (
        "fake/gpt-4o-mini", 1200, 30, 1000)  # fmt: skip
    assert group["costUsd"] == pytest.approx((200 * 0.15 + 1000 * 0.075 + 30 * 0.6) / 1e6)


def test_the_table_shows_sources_and_a_total(live: RunningGateway, llm: FakeLLMServer) -> None:
    use(live, "openai", llm.openai_base_url, "gpt-4o-mini")
    code, out, _ = gsv(live, "usage")
    assert (code, out) == (0, "no model calls in this range\n")
    assert gsv(live, "chat", "hi")[0] == 0
    code, out, _ = gsv(live, "usage", "--since", "1d")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["source", "calls"]
    assert lines[1].split()[:2] == ["chat", "1"] and lines[2].split()[:2] == ["total", "1"]
    report = ledger(live)
    assert report["count"] == 1 and report["groupBy"] == "source"


def test_slash_usage_reports_today(live: RunningGateway, llm: FakeLLMServer) -> None:
    use(live, "openai", llm.openai_base_url, "gpt-4o-mini")
    assert gsv(live, "chat", "hi")[0] == 0
    code, out, _ = gsv(live, "chat", "/usage")
    assert code == 0
    assert "This session: 1 calls" in out and "All sessions: 1 calls" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "neither a span"),
        (["--since", "7x"], "neither a span"),
        (["--by", "week"], "--by must be one of"),
    ],
)
def test_bad_options_say_what_is_accepted(
    live: RunningGateway, args: list[str], message: str
) -> None:
    code, _, err = gsv(live, "usage", *args)
    assert code == 2 and message in " ".join(err.split())


def test_the_day_bars_scale_to_the_costliest_day(capsys: pytest.CaptureFixture[str]) -> None:
    from gsv_cli.commands.usage import BAR_WIDTH
    from gsv_cli.commands.usage import print_days

    days = [{"name": "2026-11-24", "costUsd": 0.5, "input": 1, "output": 1},
            {"name": "2026-11-25", "costUsd": 1.0, "input": 1, "output": 1},
            {"name": "2026-11-26", "costUsd": 0.0, "input": 0, "output": 0}]  # fmt: skip
    print_days(days)
    bars = {line.split()[0]: line.count("█") for line in capsys.readouterr().out.splitlines()
            if line.startswith("  ")}  # fmt: skip
    assert bars == {"2026-11-24": BAR_WIDTH // 2, "2026-11-25": BAR_WIDTH, "2026-11-26": 0}
