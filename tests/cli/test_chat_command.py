"""`gsv chat "..."` (one-shot) against a real gateway in a thread with a scripted model:
streamed text on stdout, tool lines on stderr, exit codes, --json, stdin."""

from __future__ import annotations

import json

from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import Fail
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call


def gsv(url: str, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args], input=stdin)


def test_the_reply_streams_to_stdout_and_exits_0(live: RunningGateway, fake: FakeProvider) -> None:
    """The deltas are printed as one line of text; exit 0 on final."""
    fake.enqueue("Hello ", "there")
    result = gsv(live.url, "chat", "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Hello there\n"
    assert fake.requests[0].messages[-1]["content"] == "hi"


def test_tool_activity_goes_to_stderr(live: RunningGateway, fake: FakeProvider) -> None:
    """Each tool call is one line on stderr; stdout holds only the reply's text."""
    fake.enqueue("Looking.", call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("Done.")
    result = gsv(live.url, "chat", "check")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Looking.\nDone.\n"
    assert "[tool] gsv__ConfigGet (" in result.stderr


def test_a_failed_run_exits_1_with_the_error_on_stderr(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """A provider failure ends the command with exit 1 and the message on stderr."""
    fake.enqueue(Fail(ProviderFailed("the model is down")))
    result = gsv(live.url, "chat", "hi")
    assert result.exit_code == 1
    assert "the model is down" in result.stderr


def test_json_prints_every_event_as_a_line(live: RunningGateway, fake: FakeProvider) -> None:
    """--json: the chat.send result, then the run's events, one JSON document per line."""
    fake.enqueue("a", "b")
    result = gsv(live.url, "chat", "--json", "hi")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["status"] == "started"
    states = [line.get("state") for line in lines[1:]]
    assert states == ["delta", "delta", "final"]
    assert all(line["runId"] == lines[0]["runId"] for line in lines[1:])


def test_a_dash_reads_the_message_from_stdin(live: RunningGateway, fake: FakeProvider) -> None:
    """`gsv chat -` sends what stdin holds."""
    result = gsv(live.url, "chat", "-", stdin="from a pipe\n")
    assert result.exit_code == 0, result.output
    assert fake.requests[0].messages[-1]["content"] == "from a pipe"


def test_commands_answer_at_once_with_exit_codes(live: RunningGateway) -> None:
    """/help prints the help (exit 0); a bad /think prints the error (exit 1)."""
    helped = gsv(live.url, "chat", "/help")
    assert helped.exit_code == 0 and "/new" in helped.stdout
    bad = gsv(live.url, "chat", "/think sideways")
    assert bad.exit_code == 1 and "Invalid level: sideways" in bad.stderr


def test_the_session_option_picks_the_session(live: RunningGateway, fake: FakeProvider) -> None:
    """-s sends to that session; events of other sessions are not printed."""
    result = gsv(live.url, "chat", "-s", "agent:ops:main", "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok\n"


def test_an_empty_message_is_a_clear_error(live: RunningGateway) -> None:
    """A blank message is refused before anything is sent."""
    result = gsv(live.url, "chat", "   ")
    assert result.exit_code == 1 and "empty" in result.stderr


def test_no_gateway_exits_3() -> None:
    """Nothing listening: the hint to start the gateway, exit 3."""
    result = gsv("ws://127.0.0.1:9/ws", "chat", "hi")
    assert result.exit_code == 3 and "gsv gateway run" in result.stderr


def test_a_piped_message_needs_no_dash(live: RunningGateway, fake: FakeProvider) -> None:
    """`echo hi | gsv chat`: stdin is not a terminal and no message is given, so the
    message is what the pipe holds (issue 40.8), as `llm` does."""
    import subprocess
    import sys

    from tests.threaded import owner_env

    done = subprocess.run([sys.executable, "-m", "gsv_cli", "--url", live.url, "chat"],
                          input="hi from echo\n", capture_output=True, text=True, timeout=120,
                          env=owner_env(live))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert fake.requests[-1].messages[-1]["content"] == "hi from echo"
