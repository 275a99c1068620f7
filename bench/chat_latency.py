"""Chat latency with an instant fake LLM (the test suite's HTTP fake, driven by the real
OpenAI SDK inside the gateway): `chat.send` ack, time to first `delta`, time to `final`,
for a one-turn reply and for a reply that calls one node tool.

    python -m bench.chat_latency [-n 200]

The gateway and the node run in their own processes; the fake LLM server runs in a thread
here. Printed beside the raw websockets echo RTT of the same run. Targets: ack
p50 <= 2 ms, final p50 <= 15 ms for a one-turn reply.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench._servers import gateway_process
from bench._servers import loop_name
from bench._servers import node_process
from bench._servers import server_process
from bench.rpc_latency import echo_rtts
from bench.rpc_latency import percentile
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply

NODE_ID = "bench"


def line(name: str, samples: list[float]) -> str:
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    return f"{name:<34} p50 {p50 * 1e3:7.2f} ms   p99 {p99 * 1e3:7.2f} ms"


async def one_run(client: Any, events: Any, message: str) -> tuple[float, float, float]:
    """(ack, first delta, final) seconds for one chat.send."""
    run_id = str(uuid.uuid4())
    start = time.perf_counter()
    await client.call("chat.send", {"sessionKey": "bench", "message": message, "runId": run_id})
    ack = time.perf_counter() - start
    first = None
    async for frame in events:
        payload = frame.payload or {}
        if payload.get("runId") != run_id:
            continue
        state = payload.get("state")
        if state == "delta" and first is None:
            first = time.perf_counter() - start
        if state in ("final", "error"):
            if state == "error":
                raise RuntimeError(payload.get("error"))
            return ack, first or 0.0, time.perf_counter() - start
    raise RuntimeError("events ended")


async def measure(
    url: str, token: str, llm: FakeLLMServer, count: int, with_tool: bool
) -> list[tuple[float, float, float]]:
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        provider = {"api": "openai", "baseUrl": llm.openai_base_url}
        await client.call("config.set", {"path": "providers.fake", "value": provider})
        await client.call("config.set", {"path": "model", "value": {"provider": "fake", "id": "m"}})
        events = client.events()
        samples = []
        for i in range(count + 5):  # 5 warm-up runs
            if with_tool:
                llm.enqueue(reply(ToolCall(f"{NODE_ID}__Read", {"path": "small.txt"})))
            llm.enqueue(reply("Hello", " there."))
            result = await one_run(client, events, f"message {i}")
            if i >= 5:
                samples.append(result)
            if i % 50 == 0:  # keep the session short so history size does not dominate
                await client.call("chat.send", {"sessionKey": "bench", "message": "/new"})
        return samples


async def wait_for_node(url: str, token: str) -> None:
    from gsv_core.client import GatewayClient

    async with GatewayClient(url, token=token) as client:
        for _ in range(500):
            if any(
                t["name"] == f"{NODE_ID}__Read" for t in (await client.call("tools.list"))["tools"]
            ):
                return
            await asyncio.sleep(0.02)
    raise RuntimeError("the node never registered")


def report(title: str, samples: list[tuple[float, float, float]]) -> dict[str, float]:
    ack, first, final = ([s[i] for s in samples] for i in range(3))
    print(title)
    print(line("  chat.send ack", ack))
    print(line("  first delta", first))
    print(line("  final", final))
    return {"ack_p50": percentile(ack, 0.5), "final_p50": percentile(final, 0.5)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=200)
    count = max(10, min(parser.parse_args(argv).count, 2000))
    with server_process("echo") as echo_url:
        echo = asyncio.run(echo_rtts(echo_url, 2000))
    with (
        fake_llm_server() as llm,
        tempfile.TemporaryDirectory() as tmp,
        gateway_process(tmp) as (url, token),
    ):
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "small.txt").write_text("one\ntwo\n")
        with node_process(url, token, NODE_ID, workspace, Path(tmp) / "home"):
            asyncio.run(wait_for_node(url, token))
            plain = asyncio.run(measure(url, token, llm, count, with_tool=False))
            tooled = asyncio.run(measure(url, token, llm, count, with_tool=True))
    print(f"{count} runs each, 127.0.0.1, servers on {loop_name()}")
    print(f"raw websockets echo RTT             p50 {percentile(echo, 0.5) * 1e3:7.2f} ms")
    figures = report("one-turn reply", plain)
    report("reply with one node tool call", tooled)
    print(json.dumps({k: round(v * 1e3, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
