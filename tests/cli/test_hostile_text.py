"""Hostile text in stored data, through a real gateway (thread), shown by every listing
command: exit 0, no traceback, each string shown as written (brackets visible, controls
as stand-ins) and no raw control character on stdout or stderr."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner
from typer.testing import Result

from gsv_cli.main import app
from gsv_core.channels.base import InboundMessage
from gsv_core.channels.base import Peer
from gsv_core.channels.base import Sender
from gsv_core.client import ClientIdentity
from gsv_core.client import GatewayClient
from gsv_core.gateway.server import RunningGateway
from tests.fakes.provider import FakeProvider
from tests.fakes.provider import call
from tests.hostile import HOSTILE
from tests.hostile import RAW_CONTROL
from tests.hostile import Hostile
from tests.wire import node_runtime
from tests.wire import owner_token

TOOLS = [{"name": "Read", "description": "read a file", "inputSchema": {"type": "object"}}]


def gsv(url: str, *args: str) -> Result:
    # wide enough that no hostile cell is folded onto two lines
    return CliRunner().invoke(app, ["--url", url, *args], env={"COLUMNS": "200"})


def rpc(url: str, method: str, params: dict[str, Any] | None = None) -> Any:
    async def go() -> Any:
        async with GatewayClient(url, token=owner_token()) as client:
            return await client.call(method, params)

    return asyncio.run(go())


def wait_for(what: str, check: Callable[[], object]) -> None:
    """Poll the gateway (in its own thread) until `check()` is truthy."""
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# -- seeding: each puts every hostile string where its command shows it ---------------------
Seeder = Callable[[RunningGateway, FakeProvider], list[Hostile]]


def labelled_sessions(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    for index, hostile in enumerate(HOSTILE):
        rpc(
            live.url,
            "session.patch",
            {"sessionKey": f"agent:main:h{index}", "label": hostile.written},
        )
    return list(HOSTILE)  # fmt: skip


def one_line(hostile: Hostile) -> bool:
    """Not a string with a CR: summaries and descriptions are one line (the gateway turns
    line breaks into spaces), so it arrives changed."""
    return "\r" not in hostile.written


def cron_replies(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    """A job named with each string whose run's reply is the string."""
    for hostile in HOSTILE:
        added = gsv(live.url, "cron", "add", "--name", hostile.written, "--every", "1h",
                    "--message", "report")  # fmt: skip
        assert added.exit_code == 0, added.stderr
        fake.enqueue(hostile.written)
        ran = gsv(live.url, "cron", "run", added.stdout.strip(), "--force")
        assert ran.exit_code == 0 and not RAW_CONTROL.search(ran.stdout), ran.stdout
        assert hostile.shown in ran.stdout or not one_line(hostile)
    return [hostile for hostile in HOSTILE if one_line(hostile)]


def pairing_requests(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    """A stranger per string, named with it, whose first message is it."""
    rpc(live.url, "channel.start", {"channel": "test"})
    adapter = live.gateway.channels.adapters["test"]
    for index, hostile in enumerate(HOSTILE):
        sender = f"stranger{index}"
        message = InboundMessage("test", "default", Peer("dm", sender), f"m{index}",
                                 hostile.written, sender=Sender(sender, hostile.written))  # fmt: skip
        injected = adapter.inject(message)  # type: ignore[attr-defined]
        asyncio.run_coroutine_threadsafe(injected, live.server.get_loop()).result(30)
    wait_for("the requests", lambda: len(rpc(live.url, "pair.list")["pairs"]) == len(HOSTILE))
    return list(HOSTILE)


def pending_approvals(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    """A run per string, paused on a tool call whose path is the string."""
    rule = {"id": "ask", "tool": "gsv__ConfigGet", "decision": "ask", "reason": "[/] why"}
    rpc(live.url, "config.set", {"path": "toolApproval.rules", "value": [rule]})
    for index, hostile in enumerate(HOSTILE, start=1):
        fake.enqueue(call("gsv__ConfigGet", {"path": hostile.written}))
        rpc(live.url, "chat.send", {"sessionKey": f"agent:main:h{index}", "message": "go"})
        count = lambda: len(rpc(live.url, "tool.approvals")["approvals"])  # noqa: E731
        wait_for("the approval", lambda: count() == index)  # noqa: B023
    return [*HOSTILE, Hostile("reason", "[/] why", "[/] why")]


def channel_accounts(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    for hostile in HOSTILE:
        rpc(live.url, "channel.start", {"channel": "test", "accountId": hostile.written})
    return list(HOSTILE)


def skill_descriptions(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    for index, hostile in enumerate(HOSTILE):
        # a JSON string is a YAML double-quoted scalar: its escapes bring ESC, BEL, C1 in
        manifest = f"---\nname: h{index}\ndescription: {json.dumps(hostile.written)}\n---\n"
        rpc(live.url, "workspace.write", {"path": f"skills/h{index}/SKILL.md", "content": manifest})
    return [hostile for hostile in HOSTILE if one_line(hostile)]


def node_platforms(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    """A node per string that said it runs on that platform, version the same."""

    async def visit(index: int, hostile: Hostile) -> None:
        identity = ClientIdentity(mode="node", id=f"node{index}", platform=hostile.written,
                                  version=hostile.written, tools=TOOLS,
                                  node_runtime=node_runtime(TOOLS))  # fmt: skip
        async with GatewayClient(live.url, token=live.token) as owner:
            invite = await owner.call("auth.invite", {"role": "node", "subject": identity.id})
        identity.join_code = invite["code"]  # a node joins with its own credential
        async with GatewayClient(live.url, identity=identity):
            pass

    for index, hostile in enumerate(HOSTILE):
        asyncio.run(visit(index, hostile))
    return list(HOSTILE)


def file_names(live: RunningGateway, fake: FakeProvider) -> list[Hostile]:
    """Files named with each string a workspace path may hold (C0 and `/` are refused)."""
    named = [hostile for hostile in HOSTILE if hostile.path_safe]
    for hostile in named:
        rpc(live.url, "workspace.write", {"path": hostile.written, "content": "x"})
    return named


LISTINGS: dict[str, tuple[list[str], Seeder]] = {
    "sessions": (["sessions", "list"], labelled_sessions),
    "cron runs": (["cron", "runs"], cron_replies),
    "cron list": (["cron", "list"], cron_replies),
    "pairing list": (["pairing", "list"], pairing_requests),
    "approvals list": (["approvals", "list"], pending_approvals),
    "channels status": (["channels", "status", "test"], channel_accounts),
    "skills list": (["skills", "list"], skill_descriptions),
    "nodes list": (["nodes", "list"], node_platforms),
    "workspace ls": (["workspace", "ls"], file_names),
}


@pytest.mark.parametrize("listing", LISTINGS)
def test_listings_show_hostile_text_as_written(
    listing: str, live: RunningGateway, fake: FakeProvider
) -> None:
    """Every string shows literally; nothing in it is parsed as markup or obeyed."""
    argv, seed = LISTINGS[listing]
    expected = seed(live, fake)
    shown = gsv(live.url, *argv)
    assert shown.exit_code == 0, shown.stderr
    assert "Traceback" not in shown.stdout + shown.stderr
    for hostile in expected:
        assert hostile.shown in shown.stdout, f"{hostile.name} not shown as written"
    leaked = RAW_CONTROL.findall(shown.stdout + shown.stderr)
    assert not leaked, f"raw control characters reached the terminal: {leaked}"


def test_chat_streams_hostile_replies_and_tool_errors_as_written(
    live: RunningGateway, fake: FakeProvider
) -> None:
    """`gsv chat "message"`: the streamed reply on stdout and a failed tool's line on
    stderr (the model named the tool) show every string as written, nothing obeyed."""
    fake.enqueue(*(f"{hostile.written} | " for hostile in HOSTILE), call("gsv__No[/]\x1b[2J"))
    fake.enqueue("done")
    chatted = gsv(live.url, "chat", "show me")
    assert chatted.exit_code == 0, chatted.stderr
    assert chatted.stdout.startswith(" | ".join(hostile.shown for hostile in HOSTILE))
    assert "Unknown native tool: gsv__No[/]␛[2J" in chatted.stderr
    leaked = RAW_CONTROL.findall(chatted.stdout + chatted.stderr)
    assert not leaked, f"raw control characters reached the terminal: {leaked}"
