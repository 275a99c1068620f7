"""What a conversation costs in prompt: the first request's size with 0, 1 and 3 nodes
(and 3 nodes beside an MCP server of 200 tools), and how much of a 10-turn conversation
the Anthropic prompt cache serves.

    python -m bench.prompt_size [--baseline REV]

A real gateway and real `gsv node run` processes talk to the fake Anthropic server on
127.0.0.1, which keeps a prompt cache the way the API documents it
(tests/fakes/prompt_cache.py: breakpoints, 20-block lookback, 1024-token minimum).
Printed: bytes of the first request body of a one-word `chat.send`, split into system
prompt and tool schemas, with an estimated token count (bytes / 4); then, over ten turns
with one tool call each, the share of turns 2-10's input tokens marked cacheable (read
from or written to the cache) and read from it. With `--baseline REV` the first-request
figures of that git revision are measured in the same run and the ratio printed.

Targets: the first request with one node at most 60% of the bytes before this bench
existed; at least 80% of the input tokens of turns 2-10 cacheable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench._servers import gateway_process
from bench._servers import node_process
from bench.ab import worktree
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply
from tests.fakes.prompt_cache import CacheUsage
from tests.fakes.prompt_cache import PromptCache
from tests.mcp.conftest import stdio

TURNS = 10
NODE = "n"


async def configure(client: Any, llm: FakeLLMServer) -> None:
    provider = {"api": "anthropic", "baseUrl": llm.anthropic_base_url}
    await client.call("config.set", {"path": "providers.fake", "value": provider})
    model = {"provider": "fake", "id": "claude-fake"}
    await client.call("config.set", {"path": "model", "value": model})


async def chat(client: Any, events: Any, session: str, message: str) -> None:
    """One chat.send, waited for to its final (or error) event."""
    run_id = str(uuid.uuid4())
    params = {"sessionKey": session, "message": message, "runId": run_id}
    await client.call("chat.send", params)
    async for frame in events:
        payload = frame.payload or {}
        if payload.get("runId") == run_id and payload.get("state") in ("final", "error"):
            if payload["state"] == "error":
                raise RuntimeError(payload.get("error"))
            return
    raise RuntimeError("events ended")


async def wait_for_nodes(client: Any, count: int) -> None:
    for _ in range(1000):  # bounded: 20 s
        nodes = (await client.call("nodes.list"))["nodes"]
        if sum(1 for node in nodes if node.get("online")) >= count:
            return
        await asyncio.sleep(0.02)
    raise RuntimeError(f"{count} nodes never came online")


def sizes(body: dict[str, Any]) -> dict[str, int]:
    def size(value: Any) -> int:
        return len(json.dumps(value, separators=(",", ":")).encode()) if value else 0

    return {
        "total": size(body),
        "system": size(body.get("system")),
        "tools": size(body.get("tools")),
    }


async def first_request(url: str, token: str, llm: FakeLLMServer, nodes: int) -> dict[str, int]:
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        await configure(client, llm)
        await wait_for_nodes(client, nodes)
        await chat(client, client.events(), f"size-{nodes}-{uuid.uuid4().hex[:6]}", "hi")
    return sizes(llm.requests[-1].body)


async def cached_share(url: str, token: str, llm: FakeLLMServer) -> tuple[float, float]:
    """(cacheable, read) shares of the input tokens of turns 2..TURNS."""
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        await configure(client, llm)
        await wait_for_nodes(client, 1)
        events, session = client.events(), f"cache-{uuid.uuid4().hex[:6]}"
        llm.prompt_cache = PromptCache()
        counted: list[CacheUsage] = []
        for turn in range(TURNS):
            llm.enqueue(reply(ToolCall(f"{NODE}0__Read", {"path": "notes.txt"})))
            llm.enqueue(reply(f"Turn {turn}: the notes say hello."))
            start = len(llm.requests)
            await chat(client, events, session, f"What do the notes say now? ({turn})")
            if turn:
                counted += [r.cache_usage for r in llm.requests[start:] if r.cache_usage]
        llm.prompt_cache = None
    total = sum(u.total for u in counted)
    return sum(u.cache_read + u.cache_write for u in counted) / total, sum(
        u.cache_read for u in counted
    ) / total


async def with_mcp_tools(url: str, token: str, llm: FakeLLMServer) -> dict[str, int]:
    """The first request once an MCP server with 200 tools is added (tools found on
    demand keep them out of it: gsv_core/gateway/tool_search.py)."""
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        await client.call("mcp.add", {"name": "many", **stdio("--many")})
    return await first_request(url, token, llm, 3)


def measure(tree: Path | None, with_cache: bool) -> tuple[dict[str, dict[str, int]], Any]:
    """First-request sizes with 0, 1 and 3 nodes (then the cache shares) for `tree`."""
    results: dict[str, dict[str, int]] = {}
    shares = None
    with fake_llm_server() as llm, tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        url, token = stack.enter_context(gateway_process(str(folder / "gw"), tree=tree))
        started = 0
        for count in (0, 1, 3):
            for index in range(started, count):
                workspace = folder / f"ws{index}"
                workspace.mkdir()
                (workspace / "notes.txt").write_text("hello\n")
                stack.enter_context(node_process(url, token, f"{NODE}{index}", workspace,
                                                 folder / f"home{index}", tree=tree))  # fmt: skip
            started = count
            results[str(count)] = asyncio.run(first_request(url, token, llm, count))
        if with_cache:  # this tree only (an older one may know no MCP), after the shares
            shares = asyncio.run(cached_share(url, token, llm))
            results["3 + 200 MCP"] = asyncio.run(with_mcp_tools(url, token, llm))
    return results, shares


def report(title: str, results: dict[str, dict[str, int]]) -> None:
    print(title)
    for count, size in results.items():
        print(f"  {count} node(s): {size['total']:6d} bytes (~{size['total'] // 4:5d} tokens)"
              f"   system {size['system']:6d}   tools {size['tools']:6d}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", help="git revision to compare with")
    args = parser.parse_args(argv)
    results, shares = measure(None, with_cache=True)
    report("first request of a one-word chat.send (this tree)", results)
    if args.baseline:
        with worktree(args.baseline) as tree:
            before, _ = measure(tree, with_cache=False)
        report(f"first request ({args.baseline})", before)
        for count in before:
            ratio = results[count]["total"] / before[count]["total"]
            print(f"  {count} node(s): {ratio:.0%} of {args.baseline}'s bytes")
    assert shares is not None
    cacheable, read = shares
    print(f"turns 2-{TURNS} (one tool call each): {cacheable:.0%} of input tokens cacheable, "
          f"{read:.0%} read from cache")  # fmt: skip


if __name__ == "__main__":
    main()
