"""Answers a client written for the original relies on: for each method, the result fields
the original always sent (gsv may add more) and the original's errors for the common
refusals. Frames are built by hand, as a foreign client builds them."""

from __future__ import annotations

from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from tests.wire import request

KEY = {"sessionKey": "main"}
TOKENS = {"input", "output", "total"}

# (method, params, fields the result always has) in an order that makes sense to run
RESULTS: list[tuple[str, dict[str, Any], set[str]]] = [
    ("session.get", KEY, {"sessionId", "sessionKey", "createdAt", "updatedAt", "messageCount",
                          "tokens", "settings", "previousSessionIds"}),
    ("session.stats", KEY, {"sessionKey", "sessionId", "messageCount", "tokens", "createdAt",
                            "updatedAt", "uptime", "isProcessing", "queueSize"}),
    ("session.patch", {**KEY, "label": "old client"}, {"ok"}),
    ("session.history", KEY, {"sessionKey", "currentSessionId", "previousSessionIds"}),
    ("session.preview", KEY, {"sessionKey", "sessionId", "messageCount", "messages"}),
    ("session.compact", KEY, {"ok", "trimmedMessages", "keptMessages"}),
    ("session.reset", KEY, {"ok", "sessionKey", "oldSessionId", "newSessionId",
                            "archivedMessages", "tokensCleared", "mediaDeleted"}),
    ("sessions.list", {}, {"sessions", "count"}),
    ("channels.list", {}, {"channels", "count"}),
    ("config.get", {}, {"config"}),
    ("config.get", {"path": "session.mainKey"}, {"path", "value"}),
    ("config.set", {"path": "session.dmScope", "value": "main"}, {"ok", "path"}),
    ("tools.list", {}, {"tools"}),
    ("heartbeat.status", {}, {"agents"}),
    ("cron.status", {}, {"enabled", "count", "dueCount", "runningCount", "maxJobs",
                         "maxConcurrentRuns"}),
    ("cron.list", {}, {"jobs", "count"}),
    ("cron.runs", {}, {"runs", "count"}),
    ("cron.run", {}, {"ok", "ran", "results"}),
    ("cron.remove", {"id": "no-such-job"}, {"ok", "removed"}),
    ("pair.list", {}, {"pairs"}),
    ("skills.status", {}, {"agentId", "refreshedAt", "requiredBins", "nodes", "skills"}),
    ("workspace.write", {"path": "notes/a.md", "content": "hi"}, {"path", "size", "written"}),
    ("workspace.read", {"path": "notes/a.md"}, {"path", "content", "size"}),
    ("workspace.list", {"path": "notes"}, {"path", "files", "directories"}),
    ("workspace.delete", {"path": "notes/a.md"}, {"path", "deleted"}),
    ("node.forget", {"nodeId": "ghost"}, {"ok", "nodeId", "removed", "disconnected"}),
]  # fmt: skip

# (method, params, code, the original's message)
ERRORS: list[tuple[str, dict[str, Any], int, str]] = [
    ("no.such.method", {}, 404, "Unknown method: no.such.method"),
    ("tool.invoke", {"tool": "ghost__Bash"}, 404, "No node provides tool: ghost__Bash"),
    ("tool.invoke", {"tool": "Bash"}, 404, "No node provides tool: Bash"),
    ("logs.get", {}, 503, "No nodes connected"),
    ("logs.get", {"nodeId": "ghost"}, 503, "Node not connected: ghost"),
    ("tool.result", {"callId": "c1"}, 403, "Method tool.result not allowed for mode"),
]


async def test_results_carry_every_field_the_original_sent(owner: ClientConnection) -> None:
    """Each method answers ok with at least the original's always-present fields."""
    for method, params, fields in RESULTS:
        reply = await request(owner, method, params)
        assert reply["ok"], (method, reply)
        missing = fields - set(reply["payload"])
        assert not missing, (method, missing)


async def test_token_counts_and_settings_keep_their_shapes(owner: ClientConnection) -> None:
    """tokens is {input, output, total}; a reset says which tokens it cleared."""
    got = (await request(owner, "session.get", KEY))["payload"]
    assert set(got["tokens"]) == TOKENS
    assert isinstance(got["settings"], dict)
    reset = (await request(owner, "session.reset", KEY))["payload"]
    assert set(reset["tokensCleared"]) == TOKENS
    assert reset["oldSessionId"] != reset["newSessionId"]


@pytest.mark.parametrize(("method", "params", "code", "message"), ERRORS)
async def test_common_refusals_have_the_originals_code_and_message(
    owner: ClientConnection, method: str, params: dict[str, Any], code: int, message: str
) -> None:
    """Unknown method, unknown node tool, no node: the code and text the original sent."""
    error = (await request(owner, method, params))["error"]
    assert (error["code"], error["message"]) == (code, message)
