"""bench.floors: the transport's crowd and the SDK's own CPU per model call, each against
real parts (the raw echo server in its own process; the official SDK in a child process,
posting to the fake LLM server on 127.0.0.1), and how bench.turn_profile prints them."""

from __future__ import annotations

import json

import pytest

from bench.floors import WARM_UP
from bench.floors import echo_crowd
from bench.floors import sdk_call_cpu
from bench.turn_profile import TurnFigures
from bench.turn_profile import report
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply


def test_echo_crowd_times_every_frame_of_every_burst() -> None:
    figures = echo_crowd(count=5, bursts=2, idle_samples=30)
    assert len(figures.idle) == 30
    assert len(figures.crowd) == 10  # every connection answered, in both bursts
    assert all(sample > 0 for sample in figures.idle + figures.crowd)
    assert figures.crowd_p99 == max(figures.crowd)  # the p99 of ten is the slowest
    assert figures.ratio == pytest.approx(figures.crowd_p99 / figures.idle_p99)


@pytest.mark.parametrize(
    "arguments",
    [
        {"count": 0, "bursts": 1},
        {"count": 3, "bursts": 0},
        {"count": 3, "bursts": 1, "idle_samples": 0},
    ],
)
def test_echo_crowd_refuses_an_empty_measure(arguments: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        echo_crowd(**arguments)


def test_sdk_calls_post_the_body_given_and_read_the_stream() -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with fake_llm_server() as llm:
        llm.enqueue(*(reply("Hello", " there.") for _ in range(WARM_UP + 3)))
        cpu = sdk_call_cpu(llm.openai_base_url, json.dumps(body).encode(), calls=3)
        assert cpu > 0  # seconds of CPU per call (no upper bound: the machine may be loaded)
        assert llm.pending == 0  # every scripted reply was asked for
        assert len(llm.requests) == WARM_UP + 3
        assert all(r.path.endswith("/chat/completions") for r in llm.requests)
        assert all(r.body == body for r in llm.requests)


def test_sdk_calls_that_fail_say_so() -> None:
    with fake_llm_server() as llm:
        llm.enqueue(ErrorReply(401, "bad key"))
        with pytest.raises(RuntimeError, match="failed: AuthenticationError"):
            sdk_call_cpu(llm.openai_base_url, b"{}", calls=1)


def test_sdk_calls_refuse_zero() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        sdk_call_cpu("http://127.0.0.1:9/v1", b"{}", calls=0)


def test_the_turn_report_shows_the_sdk_part(capsys: pytest.CaptureFixture[str]) -> None:
    figures = TurnFigures(turns=[0.010] * 40, config_get=0.0003, sdk_call=0.003)
    report(figures, watchers=2)
    out = capsys.readouterr().out
    assert "33.3x" in out  # the whole turn against a config.get
    assert "10.0x a config.get" in out  # the SDK's call
    assert "turn without it / config.get   23.3x" in out
    assert out.rstrip().endswith("FAIL")
    report(TurnFigures(turns=[0.010] * 40, config_get=0.0003), watchers=2)
    assert "SDK" not in capsys.readouterr().out  # not measured, not printed
