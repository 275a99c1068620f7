"""Chaos bench for failover (docs/models.md#fallbacks): turns through a real gateway
whose three-model chain (alpha on the Anthropic API, beta and gamma on OpenAI's) is served
by the fake LLM server on 127.0.0.1, which fails a share of all requests with the
providers' real error answers: overloaded, 5xx, Cloudflare's 502, rate limits with
retry-after, a stream cut after some words, an error event mid-stream.

    python -m bench.failover [-n 200] [--fail 0.3] [--seed 39] [--deadline 600]

Prints turns answered, turns whose words were shown or stored twice, the tokens spent on
attempts cut mid-stream (an estimate: their prompt and the words they streamed), and the
time failover added to a turn (its time less a clean turn's median, less the retry-after
waits the providers asked for). Targets: every turn answered, none duplicated, p50 added
time under 2 s apart from retry-after. Bounded: at most -n turns and --deadline seconds.
Real retry waits are slept (the default RetryPolicy), as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.fakes import provider_errors as real
from tests.fakes.llm_server import ErrorReply
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_server import RecordedRequest
from tests.fakes.llm_server import Reply
from tests.fakes.llm_server import Turn
from tests.fakes.llm_server import fake_llm_server
from tests.fakes.llm_server import reply

CHAIN = [("alpha", "alpha-1", "anthropic"), ("beta", "beta-1", "openai"),
         ("gamma", "gamma-1", "openai")]  # fmt: skip


def _short_wait(error: ErrorReply) -> ErrorReply:
    """A rate limit asking for one second (the bench's time stays bounded)."""
    return replace(error, headers={**error.headers, "retry-after": "1"})


ERRORS: dict[str, list[Turn | str]] = {
    "anthropic": [real.ANTHROPIC_OVERLOADED, real.ANTHROPIC_API_ERROR,
                  _short_wait(real.ANTHROPIC_RATE_LIMIT), "cut", "stream-error"],
    "openai": [real.OPENAI_SERVER_ERROR, real.OPENAI_BAD_GATEWAY, real.OPENAI_UNAVAILABLE,
               _short_wait(real.OPENAI_RATE_LIMIT), "cut", "stream-error"],
}  # fmt: skip


def answer_words(turn: int) -> list[str]:
    return [f"Answer to turn {turn}: ", "the chain ", "held ", "up."]


@dataclass
class Chaos:
    """Answers each request: a failure with probability `fail`, else the turn's answer."""

    rng: random.Random
    fail: float
    turn: int = 0
    failures: dict[int, list[str]] = field(default_factory=dict)  # turn -> what failed
    hinted: dict[int, float] = field(default_factory=dict)  # turn -> retry-after sent, s
    wasted: int = 0  # tokens of attempts cut mid-stream (estimate)

    def __call__(self, request: RecordedRequest) -> Turn:
        words = answer_words(self.turn)
        if self.rng.random() >= self.fail:
            return reply(*words)
        choice = self.rng.choice(ERRORS[request.api])
        self.failures.setdefault(self.turn, []).append(_name(choice))
        if isinstance(choice, ErrorReply):
            hint = choice.headers.get("retry-after")
            if hint:
                self.hinted[self.turn] = self.hinted.get(self.turn, 0.0) + float(hint)
            return choice
        prompt = len(json.dumps(request.body.get("messages", []))) // 4
        self.wasted += prompt + len(" ".join(words[:2]).split())
        if choice == "cut":
            return reply(*words[:2], end="aborted")
        stream_error = real.ANTHROPIC_STREAM_OVERLOADED if request.api == "anthropic" else (
            real.OPENAI_STREAM_ERROR)  # fmt: skip
        return Reply((*reply(*words[:2]).parts, stream_error))


def _name(choice: Turn | str) -> str:
    return choice if isinstance(choice, str) else f"HTTP {choice.status}"


@dataclass
class Outcome:
    answered: bool
    duplicated: bool
    seconds: float
    model: str


async def one_turn(client: Any, events: Any, turn: int) -> Outcome:
    key = f"agent:main:bench-{turn}"
    start = time.perf_counter()
    run_id = (await client.call("chat.send", {"sessionKey": key, "message": f"turn {turn}"}))[
        "runId"
    ]
    shown = ""
    async for frame in events:
        payload = frame.payload or {}
        if payload.get("runId") != run_id or frame.event != "chat":
            continue
        state = payload.get("state")
        if state == "delta":
            shown = payload["text"] if payload.get("replace") else shown + payload["text"]
        elif state in ("final", "error"):
            seconds = time.perf_counter() - start
            if state == "error":
                return Outcome(False, False, seconds, "")
            message = payload["message"]
            text = "".join(b.get("text", "") for b in message["content"])
            stored = await stored_texts(client, key)
            expected = "".join(answer_words(turn))
            duplicated = shown != expected or text != expected or stored != [expected]
            return Outcome(True, duplicated, seconds, message["model"])
    raise RuntimeError("the event stream ended")


async def stored_texts(client: Any, key: str) -> list[str]:
    preview = await client.call("session.preview", {"sessionKey": key})
    return ["".join(b.get("text", "") for b in m["content"])
            for m in preview["messages"] if m["role"] == "assistant"]  # fmt: skip


async def run(turns: int, fail: float, seed: int, deadline: float) -> None:
    from gsv_core.client import GatewayClient
    from gsv_core.gateway.server import ServerConfig
    from gsv_core.gateway.server import serve

    chaos = Chaos(random.Random(seed), fail)
    outcomes: list[Outcome] = []
    with fake_llm_server() as llm, tempfile.TemporaryDirectory() as tmp:
        llm.choose = chaos
        config = ServerConfig(database=Path(tmp) / "gsv.db")
        async with serve(config, port=0) as gw, GatewayClient(gw.url, token=gw.token) as client:
            await configure(client, llm)
            events = client.events()
            ends = time.monotonic() + deadline
            for turn in range(turns):
                if time.monotonic() > ends:
                    print(f"deadline reached after {turn} turns")
                    break
                chaos.turn = turn
                outcomes.append(await one_turn(client, events, turn))
    report(outcomes, chaos, len(llm.requests))


async def configure(client: Any, llm: FakeLLMServer) -> None:
    for name, _, api in CHAIN:
        base = llm.anthropic_base_url if api == "anthropic" else llm.openai_base_url
        await client.call(
            "config.set", {"path": f"providers.{name}", "value": {"api": api, "baseUrl": base}}
        )
    fallbacks = [{"provider": name, "id": model} for name, model, _ in CHAIN[1:]]
    model = {"provider": CHAIN[0][0], "id": CHAIN[0][1], "fallbacks": fallbacks}
    await client.call("config.set", {"path": "model", "value": model})


def report(outcomes: list[Outcome], chaos: Chaos, requests: int) -> None:
    clean = [o.seconds for i, o in enumerate(outcomes) if i not in chaos.failures]
    base = statistics.median(clean) if clean else 0.0
    added = [
        max(0.0, o.seconds - base - chaos.hinted.get(i, 0.0))
        for i, o in enumerate(outcomes)
        if i in chaos.failures
    ]
    by_model: dict[str, int] = {}
    for outcome in outcomes:
        by_model[outcome.model or "none"] = by_model.get(outcome.model or "none", 0) + 1
    failed = sum(len(f) for f in chaos.failures.values())
    print(f"turns answered          {sum(o.answered for o in outcomes)}/{len(outcomes)}")
    print(f"duplicated texts        {sum(o.duplicated for o in outcomes)}")
    print(f"requests                {requests} ({failed} failed on purpose)")
    print(f"answered by             {', '.join(f'{m} {n}' for m, n in sorted(by_model.items()))}")
    print(f"wasted tokens           {chaos.wasted} (prompt + streamed words of cut attempts)")
    print(f"clean turn              p50 {base * 1e3:.1f} ms")
    if added:
        p50 = statistics.median(added)
        p90 = sorted(added)[int(0.9 * (len(added) - 1))]
        print(f"failover added          p50 {p50:.2f} s, p90 {p90:.2f} s over {len(added)} "
              "turns that met a failure (retry-after waits not counted)")  # fmt: skip
        hinted = sum(chaos.hinted.values())
        print(f"retry-after asked       {hinted:.0f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--turns", type=int, default=200)
    parser.add_argument("--fail", type=float, default=0.3, help="share of requests failed")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds at most")
    args = parser.parse_args()
    asyncio.run(run(min(args.turns, 10_000), args.fail, args.seed, args.deadline))


if __name__ == "__main__":
    main()
