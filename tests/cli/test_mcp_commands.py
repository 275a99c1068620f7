"""`gsv mcp add|list|test|remove` against a threaded gateway with a real MCP server, and
the end to end path: a server added with `gsv mcp add` is used by the agent in the next
message, a tool the server does not mark read-only asking first; `add` and `test` show
which tools run unasked."""

from __future__ import annotations

import json
import threading

from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.gateway.server import RunningGateway
from tests.cli.test_approvals_commands import gsv
from tests.cli.test_approvals_commands import rpc
from tests.cli.test_approvals_commands import wait_for
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.mcp.conftest import TOY
from tests.mcp.conftest import stdio


def add_toy(url: str, *options: str) -> Result:
    return gsv(url, "mcp", "add", "toy", *options, "--", stdio()["command"], str(TOY))


def test_an_added_server_is_used_by_the_agent_after_approval(
    live: RunningGateway, fake: FakeProvider
) -> None:
    added = add_toy(live.url)
    assert added.exit_code == 0, added.output
    assert added.stdout == (
        "Added MCP server toy: 8 tool(s).\n"
        "Run unasked: mcp_toy__picture, mcp_toy__weather, mcp_toy__readme, mcp_toy__read_note\n"
        "Ask first: mcp_toy__echo, mcp_toy__crash, mcp_toy__hang, mcp_toy__write_note\n"
    )
    assert "toolApproval.rules" in added.stderr
    fake.enqueue(call("mcp_toy__echo", {"text": "hello"}))
    fake.enqueue("It echoed.")
    outcome: list[Result] = []
    thread = threading.Thread(
        target=lambda: outcome.append(CliRunner().invoke(app, ["--url", live.url, "chat", "echo"]))
    )
    thread.start()
    pending = wait_for("the approval", lambda: rpc(live.url, "tool.approvals")["approvals"])
    assert pending[0]["tool"] == "mcp_toy__echo"
    assert pending[0]["reason"] == "the MCP server does not mark this tool read-only"
    rpc(live.url, "tool.approve", {"approvalId": pending[0]["approvalId"], "decision": "allow"})
    thread.join(60)
    assert outcome[0].exit_code == 0, outcome[0].output
    assert outcome[0].stdout == "It echoed.\n"
    offered = [tool.name for tool in fake.requests[0].tools]
    assert "mcp_toy__echo" in offered
    result = next(m for m in fake.requests[1].messages if m["role"] == "toolResult")
    assert result["content"] == [{"type": "text", "text": "echo: hello"}]
    assert result["isError"] is False


def test_add_and_test_show_which_tools_run_unasked_after_the_owners_rules(
    live: RunningGateway,
) -> None:
    """A rule set before `gsv mcp add` moves echo to the unasked ones and refuses
    read_note; `gsv mcp test` and `--json` say the same per tool."""
    rules = [{"tool": "mcp_toy__echo", "decision": "allow"},
             {"tool": "mcp_toy__read_note", "decision": "deny"}]  # fmt: skip
    rpc(live.url, "config.set", {"path": "toolApproval.rules", "value": rules})
    added = add_toy(live.url)
    assert added.exit_code == 0, added.output
    assert added.stdout.splitlines()[1:] == [
        "Run unasked: mcp_toy__echo, mcp_toy__picture, mcp_toy__weather, mcp_toy__readme",
        "Ask first: mcp_toy__crash, mcp_toy__hang, mcp_toy__write_note",
        "Refused: mcp_toy__read_note",
    ]
    tested = gsv(live.url, "mcp", "test", "toy")
    rows = {line.split()[0]: line.split()[2] for line in tested.stdout.splitlines()[1:]
            if line.startswith(("echo ", "write_note ", "read_note ", "weather "))}  # fmt: skip
    assert rows == {"echo": "unasked", "weather": "unasked", "write_note": "asks",
                    "read_note": "refused"}  # fmt: skip
    listed = json.loads(gsv(live.url, "mcp", "list", "--json").stdout)["servers"][0]["tools"]
    assert {"name": "mcp_toy__write_note", "readOnly": False, "approval": "ask"} in listed
    assert {"name": "mcp_toy__read_note", "readOnly": True, "approval": "deny"} in listed


def test_list_test_and_remove_print_what_the_server_said_as_text(live: RunningGateway) -> None:
    assert add_toy(live.url, "--env", "API_TOKEN=tok-789").exit_code == 0
    listed = gsv(live.url, "mcp", "list")
    assert listed.exit_code == 0 and "toy" in listed.stdout and "ready" in listed.stdout
    as_json = json.loads(gsv(live.url, "mcp", "list", "--json").stdout)
    assert as_json["count"] == 1 and as_json["servers"][0]["config"]["env"] == {"API_TOKEN": "***"}
    assert "tok-789" not in listed.stdout + json.dumps(as_json)
    tools = gsv(live.url, "tools", "list")
    assert "mcp server toy" in tools.stdout and "Say the text back." in tools.stdout
    tested = gsv(live.url, "mcp", "test", "toy")
    assert tested.exit_code == 0, tested.output
    assert "mcp_toy__echo" in tested.stdout and "(not offered)" in tested.stdout
    assert "[red]Shown as typed[/red]" in tested.stdout  # never read as markup
    removed = gsv(live.url, "mcp", "remove", "toy")
    assert removed.stdout == "Removed MCP server toy.\n"
    assert "No MCP servers" in gsv(live.url, "mcp", "list").stdout


def test_bad_input_gets_a_clear_error(live: RunningGateway) -> None:
    unknown = gsv(live.url, "mcp", "test", "nobody")
    assert unknown.exit_code == 1 and "no MCP server named 'nobody'" in unknown.stderr
    header = gsv(live.url, "mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp",
                 "--header", "no-equals-sign")  # fmt: skip
    assert header.exit_code == 2 and "is not KEY=VALUE" in header.stderr
    neither = gsv(live.url, "mcp", "add", "empty")
    assert neither.exit_code == 1 and "needs a command (stdio) or a url" in neither.stderr
    scheme = gsv(live.url, "mcp", "add", "web", "--url", "ftp://example.com/mcp")
    assert scheme.exit_code == 1 and "must be http:// or https://" in scheme.stderr
    bad_name = gsv(live.url, "mcp", "add", "a__b", "--", "x")
    assert bad_name.exit_code == 1 and "no valid MCP server name" in bad_name.stderr


def test_tools_call_reaches_an_mcp_tool(live: RunningGateway) -> None:
    """`gsv tools call mcp_toy__echo` runs the server's tool, as for a node's."""
    assert add_toy(live.url).exit_code == 0
    called = gsv(live.url, "tools", "call", "mcp_toy__echo", '{"text": "by hand"}')
    assert called.exit_code == 0, called.output
    assert "echo: by hand" in called.stdout
    missing = gsv(live.url, "tools", "call", "mcp_toy__nope", "{}")
    assert missing.exit_code == 1 and "nope" in missing.stderr


def test_a_credential_can_come_from_the_environment_not_the_command_line(
    live: RunningGateway,
) -> None:
    """`--env API_TOKEN` takes $API_TOKEN (no value in shell history or ps); a credential
    typed inline works but is warned about; a bare name that is not set is refused."""
    runner = CliRunner()
    base = ["--url", live.url, "mcp", "add", "toy"]
    tail = ["--", stdio()["command"], str(TOY)]
    added = runner.invoke(app, [*base, "--env", "API_TOKEN", *tail],
                          env={"API_TOKEN": "tok-from-env-123"})  # fmt: skip
    assert added.exit_code == 0, added.output
    assert "tok-from-env-123" not in added.output and "command line" not in added.stderr
    inline = runner.invoke(app, [*base, "--replace", "--env", "API_TOKEN=tok-inline-456", *tail])
    assert inline.exit_code == 0 and "API_TOKEN was given on the command line" in inline.stderr
    missing = runner.invoke(app, [*base, "--replace", "--env", "NOT_SET_HERE_9", *tail])
    assert missing.exit_code == 2 and "NOT_SET_HERE_9 is not set" in " ".join(
        missing.stderr.split()
    )
