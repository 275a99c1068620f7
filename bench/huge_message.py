"""A huge message costs its size once (issue 41 point 5): the time from `chat.send` to the
approval prompt, and the bytes the gateway sends the model on the way, for a 1 MB message
(a pasted log) and a 1 MB generated command, each in a fresh session and in a session with
100 earlier turns, beside a small message in the same two sessions.

    python -m bench.huge_message [-n 3] [--turns 100] [--mb 1] [--tree DIR]

The gateway and a node run in their own processes; an instant fake LLM (the test suite's
HTTP fake, driven by the real OpenAI SDK inside the gateway) runs in a thread here. Its
model answers a message with a Bash call that asks for approval (the huge command case:
a 1 MB heredoc); the bench denies it and waits for the run's end. Summaries asked by
compaction are answered at once. Like a real model, it refuses a request bigger than its
window (400 `context_length_exceeded`, at 4 bytes a token). The earlier turns fill about
two thirds of the window, so the huge message makes the run compact first.

Target: the 100-turn case within 3x the fresh one, and the bytes sent to the model
within 2x the window in bytes. `--tree DIR` runs the gateway and the node from another
checkout (before/after).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._servers import gateway_process
from bench._servers import loop_name
from bench._servers import node_process
from bench.chat_latency import NODE_ID
from bench.chat_latency import wait_for_node
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import RecordedRequest
from tests.fakes.llm_server import ToolCall
from tests.fakes.llm_server import Turn
from tests.fakes.llm_server import reply

ASK = "[bench: run the command]"  # a message with this asks the model for the Bash call
SMALL_COMMAND = "rm -rf ./gone"  # rm asks in every approval mode
WINDOW_TOKENS = 128_000  # the gateway's default for an unknown model id (agent/compaction.py)
WINDOW_BYTES = WINDOW_TOKENS * 4  # what the fake model takes before it refuses a request
FILLER = "Here is what I found in the logs today, line by line. " * 55  # ~3 KB a turn


@dataclass
class Case:
    name: str
    message: str
    command: str


@dataclass
class Figures:
    error: str | None  # the run's error, if it ended with one
    to_prompt: float | None  # seconds from chat.send to the tool.approval event (if any)
    to_end: float  # ... to the run's final event (after the bench denied the call)
    sent: int  # request body bytes sent to the model during the run
    requests: int


def cases(size: int) -> list[Case]:
    log = "".join(f"2026-11-28T17:{i % 60:02d}:00 worker {i} ok\n" for i in range(size // 30))
    heredoc = f"cat > report.txt <<'EOF'\n{log}EOF"
    return [
        Case("small message", f"{ASK} clean up please", SMALL_COMMAND),
        Case(f"{len(log) / 1e6:.1f} MB message", f"{ASK} what failed here?\n{log}", SMALL_COMMAND),
        Case(f"{len(heredoc) / 1e6:.1f} MB command", f"{ASK} write the report", heredoc),
    ]


def chooser(commands: dict[str, str]) -> Any:
    """The fake model: a summary for compaction, the case's Bash call for a message that
    asks, a short answer otherwise (after a tool result, for the filler turns)."""

    def choose(request: RecordedRequest) -> Turn:
        if request.size > WINDOW_BYTES:
            too_long = f"This model's maximum context length is {WINDOW_TOKENS} tokens."
            return ErrorReply(400, too_long, code="context_length_exceeded")
        messages = request.body.get("messages") or []
        system = str(messages[0].get("content")) if messages else ""
        if system.startswith("You condense a conversation"):
            return reply("<summary>They talked about logs.</summary><memories></memories>")
        last = messages[-1] if messages else {}
        text = str(last.get("content")) if last.get("role") == "user" else ""
        for marker, command in commands.items():
            if marker in text:
                return reply(ToolCall(f"{NODE_ID}__Bash", {"command": command}))
        return reply("Noted.")

    return choose


async def run_once(client: Any, events: Any, llm: FakeLLMServer, key: str, text: str) -> Figures:
    run_id, first = str(uuid.uuid4()), len(llm.requests)
    start = time.perf_counter()
    await client.call("chat.send", {"sessionKey": key, "message": text, "runId": run_id})
    to_prompt = None
    async for frame in events:
        payload = frame.payload or {}
        if payload.get("runId") != run_id:
            continue
        if frame.event == "tool.approval" and payload.get("state") == "pending":
            to_prompt = time.perf_counter() - start
            decision = {"approvalId": payload["approvalId"], "decision": "deny"}
            await client.call("tool.approve", decision)
        elif frame.event == "chat" and payload.get("state") in ("final", "error"):
            sent = llm.requests[first:]
            took = time.perf_counter() - start
            return Figures(payload.get("error"), to_prompt, took, sum(r.size for r in sent),
                           len(sent))  # fmt: skip
    raise RuntimeError("events ended")


async def measure(
    url: str, token: str, llm: FakeLLMServer, size: int, turns: int, reps: int
) -> dict[tuple[str, int], list[Figures]]:
    from gsv_core.client import GatewayClient

    all_cases = cases(size)
    # each case's message carries its own marker, so the model knows which command to call
    markers = {f"{ASK} #{i}": case.command for i, case in enumerate(all_cases)}
    llm.choose = chooser(markers)
    results: dict[tuple[str, int], list[Figures]] = {}
    async with GatewayClient(url, token=token) as client:
        provider = {"api": "openai", "baseUrl": llm.openai_base_url}
        await client.call("config.set", {"path": "providers.fake", "value": provider})
        model = {"provider": "fake", "id": "fake-model"}
        await client.call("config.set", {"path": "model", "value": model})
        events = client.events()
        await run_once(client, events, llm, "bench-warm-up", f"{ASK} #0 warm up")
        for rep in range(reps):
            for i, case in enumerate(all_cases):
                text = case.message.replace(ASK, f"{ASK} #{i}", 1)
                for earlier in (0, turns):
                    key = f"bench-{rep}-{i}-{earlier}"
                    for turn in range(earlier):
                        await run_once(client, events, llm, key, f"turn {turn}: {FILLER}")
                    figures = await run_once(client, events, llm, key, text)
                    results.setdefault((case.name, earlier), []).append(figures)
    return results


def _median_prompt(runs: list[Figures]) -> float | None:
    """The median time to the prompt, None when a run never reached it."""
    times = [f.to_prompt for f in runs]
    return None if None in times else statistics.median(t for t in times if t is not None)


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:>8.1f}x" if value is not None and base else f"{'-':>9}"


def report(results: dict[tuple[str, int], list[Figures]], turns: int) -> None:
    names = list(dict.fromkeys(name for name, _ in results))
    small = _median_prompt(results[(names[0], 0)])
    print(f"{'case':<22}{'session':>12}{'to prompt':>12}{'to end':>10}{'sent':>11}"
          f"{'requests':>10}{'x fresh':>9}{'x small':>9}")  # fmt: skip
    for name in names:
        fresh = _median_prompt(results[(name, 0)])
        for earlier in (0, turns):
            runs = results[(name, earlier)]
            prompt = _median_prompt(runs)
            shown = f"{prompt * 1e3:>10.0f}ms" if prompt is not None else f"{'none':>12}"
            end = statistics.median(f.to_end for f in runs)
            sent = max(f.sent for f in runs)
            requests = max(f.requests for f in runs)
            session = "fresh" if earlier == 0 else f"{earlier} turns"
            print(f"{name:<22}{session:>12}{shown}{end * 1e3:>8.0f}ms{sent / 1e6:>9.2f}MB"
                  f"{requests:>10}{_ratio(prompt, fresh)}{_ratio(prompt, small)}")  # fmt: skip
    print(
        f"bytes sent: the most of any repetition; the model's window is {WINDOW_TOKENS} "
        f"tokens, {WINDOW_BYTES / 1e6:.2f} MB; to prompt: none when no approval was asked"
    )
    for (name, earlier), runs in results.items():
        for error in {f.error for f in runs if f.error}:
            print(f"{name}, {earlier} earlier turns: the run ended with an error: {error}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--reps", type=int, default=3)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--tree", type=Path, default=None)
    args = parser.parse_args(argv)
    reps, turns = max(1, min(args.reps, 10)), max(1, min(args.turns, 500))
    size = int(max(0.1, min(args.mb, 8.0)) * 1_000_000)
    from tests.fakes.llm_server import fake_llm_server

    with (
        fake_llm_server() as llm,
        tempfile.TemporaryDirectory() as tmp,
        gateway_process(tmp, tree=args.tree) as (url, token),
    ):
        home = Path(tmp) / "home"
        with node_process(url, token, NODE_ID, Path(tmp) / "ws", home, tree=args.tree):
            asyncio.run(wait_for_node(url, token))
            results = asyncio.run(measure(url, token, llm, size, turns, reps))
    code = f"the gateway from {args.tree}" if args.tree else "this tree's gateway"
    print(f"{reps} repetition(s), median times, 127.0.0.1, {code} on {loop_name()}")
    report(results, turns)


if __name__ == "__main__":
    main()
