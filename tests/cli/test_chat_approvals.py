"""`gsv chat "..."` when the run asks for approval: without a terminal the
prompt says how to answer and the reply follows once someone does; on a terminal the
answer typed there (once / always / deny) goes to the gateway."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
from typing import Any

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.commands.chat import _approve
from gsv_cli.main import app
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.cli.test_approvals_commands import RULE
from tests.cli.test_approvals_commands import rpc
from tests.cli.test_approvals_commands import wait_for
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.waiting import WAIT


def test_without_a_terminal_the_prompt_says_how_to_answer(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """The approval goes to stderr with the `gsv approvals` line; approved elsewhere, the
    reply streams and the command exits 0."""
    rpc(live.url, "config.set", {"path": "toolApproval.rules", "value": [RULE]})
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue("Read it.")
    outcome: list[Result] = []
    thread = threading.Thread(
        target=lambda: outcome.append(
            CliRunner().invoke(app, ["--url", live.url, "chat", "read the model"])
        )
    )
    thread.start()
    pending = wait_for("the approval", lambda: rpc(live.url, "tool.approvals")["approvals"])
    rpc(live.url, "tool.approve", {"approvalId": pending[0]["approvalId"], "decision": "allow"})
    thread.join(30)
    result = outcome[0]
    assert result.exit_code == 0, result.output
    assert f"gsv approvals approve {pending[0]['approvalId']}" in result.stderr
    assert result.stdout == "Read it.\n"


@pytest.mark.parametrize(
    ("typed", "rules", "expected"),
    [
        ("o\n", [], {"decision": "allow"}),
        ("a\n", ["git commit"], {"decision": "allow", "remember": "always"}),
        ("a\n", [], {"decision": "deny"}),  # no rule offered: "a" is not an answer
        ("d\n", ["git commit"], {"decision": "deny"}),
        ("\n", [], {"decision": "deny"}),
    ],
)
async def test_the_answer_typed_on_the_terminal_is_sent(
    typed: str,
    rules: list[str],
    expected: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """o = once, a = always (only when a rule is offered), anything else denies."""
    sent: list[dict[str, Any]] = []

    class Recorder(GatewayClient):
        async def call(self, method: str, params: Any = None, **kwargs: Any) -> Any:
            sent.append(params)
            return {}

    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    approval = {"approvalId": "ab12cd", "tool": "n1__Bash", "summary": "git commit -m x",
                "reason": "not read-only", "alwaysAllow": rules}  # fmt: skip
    await asyncio.wait_for(_approve(Recorder("ws://127.0.0.1:9/ws"), approval, True), WAIT)
    assert sent == [{"approvalId": "ab12cd", **expected}]
    prompt = capsys.readouterr().err
    assert "Approval needed (ab12cd)" in prompt and ("[a]lways allow git commit" in prompt) == bool(
        rules
    )
