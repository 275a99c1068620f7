"""`gsv approvals list|approve|deny` against a real gateway (thread) whose run is paused on
an approval: a policy rule makes gsv__ConfigGet ask, and the scripted model calls it."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.waiting import WAIT
from tests.wire import owner_token

RULE = {"id": "ask-config", "tool": "gsv__ConfigGet", "decision": "ask", "reason": "test"}


def gsv(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--url", url, *args])


def rpc(url: str, method: str, params: dict[str, Any] | None = None) -> Any:
    async def go() -> Any:
        async with GatewayClient(url, token=owner_token()) as client:
            return await client.call(method, params)

    return asyncio.run(go())


def wait_for(what: str, check: Any) -> Any:
    """Poll the gateway (in its own thread) until `check()` is truthy."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def paused_run(live: RunningGateway, fake: FakeProvider, reply: str) -> dict[str, Any]:
    """Start a run that waits for approval of gsv__ConfigGet; the pending approval."""
    rpc(live.url, "config.set", {"path": "toolApproval.rules", "value": [RULE]})
    fake.enqueue(call("gsv__ConfigGet", {"path": "model.id"}))
    fake.enqueue(reply)
    rpc(live.url, "chat.send", {"sessionKey": "main", "message": "read the model"})
    pending: list[dict[str, Any]] = wait_for(
        "the approval", lambda: rpc(live.url, "tool.approvals")["approvals"]
    )
    return pending[0]


def tool_result_seen(fake: FakeProvider) -> str:
    """The tool result text the model saw on its second turn."""
    wait_for("the second model turn", lambda: len(fake.requests) >= 2)
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    return str(result["content"][0]["text"])


def test_list_shows_the_waiting_call_as_a_table_and_as_json(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """The pending call appears with its id, tool, reason and session in both forms."""
    approval = paused_run(live, fake, "Read it.")
    table = gsv(live.url, "approvals", "list")
    assert table.exit_code == 0, table.stderr
    for text in (approval["approvalId"], "gsv__ConfigGet", "test", "agent:main:main"):
        assert text in table.stdout, text
    as_json = json.loads(gsv(live.url, "approvals", "list", "--json").stdout)
    assert as_json["count"] == 1
    assert [a["approvalId"] for a in as_json["approvals"]] == [approval["approvalId"]]
    first = as_json["approvals"][0]
    assert first["tool"] == "gsv__ConfigGet" and first["reason"] == "test"
    global_json = json.loads(gsv(live.url, "--json", "approvals", "list").stdout)
    assert global_json == as_json


def test_list_says_so_when_nothing_waits(live: RunningGateway) -> None:
    """No pending approvals: an empty table message, and [] as JSON."""
    result = gsv(live.url, "approvals", "list")
    assert result.exit_code == 0 and "nothing waits for approval" in result.stdout
    assert json.loads(gsv(live.url, "approvals", "list", "--json").stdout) == {
        "approvals": [],
        "count": 0,
    }


def test_approve_lets_the_run_finish(live: RunningGateway, fake: FakeProvider) -> None:
    """Approving runs the tool; the model sees its real result and the list empties."""
    approval = paused_run(live, fake, "Read it.")
    result = gsv(live.url, "approvals", "approve", approval["approvalId"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"approved gsv__ConfigGet ({approval['approvalId']})\n"
    seen = tool_result_seen(fake)
    assert "model.id" in seen and "denied" not in seen
    assert rpc(live.url, "tool.approvals")["approvals"] == []


def test_an_id_prefix_is_enough(live: RunningGateway, fake: FakeProvider) -> None:
    approval = paused_run(live, fake, "Read it.")
    result = gsv(live.url, "approvals", "approve", approval["approvalId"][:6])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"approved gsv__ConfigGet ({approval['approvalId']})\n"


def test_deny_makes_the_model_see_denied_by_user(live: RunningGateway, fake: FakeProvider) -> None:
    """Denying: the tool does not run and the model's tool result says denied by user."""
    approval = paused_run(live, fake, "Fine.")
    result = gsv(live.url, "--json", "approvals", "deny", approval["approvalId"])
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["decision"] == "deny" and answer["tool"] == "gsv__ConfigGet"
    assert "denied by user" in tool_result_seen(fake)


def test_an_unknown_id_exits_1_with_a_clear_message(live: RunningGateway) -> None:
    """approve/deny of an id nothing waits under: exit 1, the reason on stderr."""
    for verb in ("approve", "deny"):
        result = gsv(live.url, "approvals", verb, "nope42")
        assert result.exit_code == 1, (verb, result.stdout)
        assert "No pending approval 'nope42'" in result.stderr and result.stdout == ""


def test_unreachable_gateway_exits_3() -> None:
    """Nothing listening: every approvals command exits 3 with a hint."""
    for args in (["list"], ["approve", "x"], ["deny", "x"]):
        result = gsv("ws://127.0.0.1:9/ws", "approvals", *args)
        assert result.exit_code == 3 and "gsv gateway run" in result.stderr, args


def test_rules_are_added_listed_and_removed(live: RunningGateway) -> None:
    """`allow` stores a rule once, `rules` lists it (table and JSON), `remove` drops it;
    removing one that is not there exits 1."""
    assert gsv(live.url, "approvals", "allow", "git", "commit").stdout == (
        "always allowed: git commit\n"
    )
    gsv(live.url, "approvals", "allow", "npm", "test")
    gsv(live.url, "approvals", "allow", "git", "commit")
    table = gsv(live.url, "approvals", "rules")
    assert table.exit_code == 0 and "git commit" in table.stdout and "npm test" in table.stdout
    assert "mode: allowlist" in table.stderr
    assert json.loads(gsv(live.url, "approvals", "rules", "--json").stdout) == {
        "rules": ["git commit", "npm test"],
        "count": 2,
    }
    assert gsv(live.url, "approvals", "remove", "git", "commit").exit_code == 0
    assert rpc(live.url, "config.get", {"path": "toolApproval.allow"})["value"] == ["npm test"]
    missing = gsv(live.url, "approvals", "remove", "git", "commit")
    assert missing.exit_code == 1 and "no rule 'git commit'" in missing.stderr


def test_a_rule_the_shell_would_interpret_is_refused(live: RunningGateway) -> None:
    """`allow 'rm $(x)'`: exit 1 with the gateway's reason; nothing stored."""
    result = gsv(live.url, "approvals", "allow", "rm", "$(x)")
    assert result.exit_code == 1 and "cannot read" in result.stderr
    assert rpc(live.url, "config.get", {"path": "toolApproval.allow"})["value"] == []


def test_approve_always_needs_a_rule_to_offer(live: RunningGateway, fake: FakeProvider) -> None:
    """A native tool call offers no program rule: --always exits 1 and the call still
    waits; a plain approve then lets it run."""
    approval = paused_run(live, fake, "Read it.")
    refused = gsv(live.url, "approvals", "approve", "--always", approval["approvalId"])
    assert refused.exit_code == 1 and "allow it once" in refused.stderr
    assert gsv(live.url, "approvals", "approve", approval["approvalId"]).exit_code == 0
    assert "model.id" in tool_result_seen(fake)


def test_one_shot_chat_queued_behind_an_approval_follows_its_own_run(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """`gsv chat "..."` while an approval waits: the gateway answers `paused` (queued); the
    CLI says so on stderr and prints the queued message's own reply once it ran."""
    import subprocess
    import sys

    from tests.threaded import owner_env

    approval = paused_run(live, fake, "Read it.")
    fake.enqueue("Second answer.")
    chat = subprocess.Popen(
        [sys.executable, "-m", "gsv_cli", "--url", live.url, "chat", "and another thing"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=owner_env(live),
    )  # fmt: skip
    wait_for("the queued message",
             lambda: rpc(live.url, "session.stats", {"sessionKey": "main"})["queueSize"])  # fmt: skip
    assert gsv(live.url, "approvals", "approve", approval["approvalId"]).exit_code == 0
    out, err = chat.communicate(timeout=60)
    assert chat.returncode == 0, err
    assert out == "Second answer.\n"
    assert approval["approvalId"] in err  # the reminder names the approval that waits


def test_show_prints_the_whole_call_that_the_list_shows_cut(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """A call with a long argument: the list and the prompts carry its start and end;
    `gsv approvals show ID` prints all of it, as text and as JSON."""
    middle = "MIDDLE-OF-THE-ARGUMENT"
    path = "model." + "a" * 5_000 + middle + "b" * 5_000 + ".END"
    rpc(live.url, "config.set", {"path": "toolApproval.rules", "value": [RULE]})
    fake.enqueue(call("gsv__ConfigGet", {"path": path}))
    fake.enqueue("Denied, fine.")
    rpc(live.url, "chat.send", {"sessionKey": "main", "message": "read it"})
    pending = wait_for("the approval", lambda: rpc(live.url, "tool.approvals")["approvals"])[0]
    assert pending["previewCut"] is True and middle not in json.dumps(pending)
    short = pending["approvalId"][:6]

    shown = gsv(live.url, "approvals", "show", short)
    assert shown.exit_code == 0, shown.stderr
    assert middle in shown.stdout and path in shown.stdout and "gsv__ConfigGet" in shown.stdout
    as_json = gsv(live.url, "approvals", "show", short, "--json")
    whole = json.loads(as_json.stdout)
    assert whole["args"] == {"path": path} and "previewCut" not in whole

    rpc(live.url, "tool.approve", {"approvalId": pending["approvalId"], "decision": "deny"})
    gone = gsv(live.url, "approvals", "show", short)
    assert gone.exit_code != 0 and "pending approval" in gone.stderr


def test_the_whole_call_is_asked_for_one_approval_at_a_time(live: RunningGateway) -> None:
    """`full` without an id, an unknown id and wrong types are refused clearly."""
    from gsv_core.errors import GsvError

    for params, code, says in (
        ({"full": True}, 400, "full needs approvalId"),
        ({"approvalId": "nope", "full": True}, 404, "No pending approval"),
        ({"approvalId": 7}, 400, "approvalId"),
        ({"approvalId": "x", "full": "yes please"}, 400, "full"),
    ):
        try:
            rpc(live.url, "tool.approvals", params)
        except GsvError as refused:
            assert refused.code == code and says in refused.message, (params, refused)
        else:
            raise AssertionError(f"{params} was accepted")
