"""`gsv__Spawn`: a sub-agent. The task runs in a fresh session of its own
(`agent:<id>:spawn:<runId>`, no history), with the tool subset and model asked for, and
the tool answers with its final reply, usage and session key.

- Several spawns in one model step run at the same time (the run loop gathers them),
  at most `agents.maxConcurrentSpawns` across the gateway; the rest wait their turn.
- Stopping the parent's run stops its children.
- A sub-agent cannot spawn (no recursion) and can call only the tools it was given.
- Its spend is ledgered under the parent's source (a cron job's sub-agent counts
  against the background budget).
- Its approval prompts go where the parent's would: to the parent conversation's chat,
  answered there by the same people (gateway/spawn_origins.py).
docs/tools.md#gateway-native-tools.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING
from typing import Any

from pydantic import Field

from gsv_core.agent.manager import SPAWN_KIND
from gsv_core.agent.run import RunFailed
from gsv_core.agent.tools import SPAWN_TOOL
from gsv_core.agent.tools import ToolCallContext
from gsv_core.config import setting
from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.gateway.native_registry import NativeArgs
from gsv_core.gateway.native_registry import NativeTool
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.protocol.messages import text_of

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

STOP_REASON = "the parent run stopped"
DESCRIPTION = (
    "Run a task in a sub-agent (a fresh session with only the tools you name) and return "
    "its final answer. Spawns in one step run at the same time: use it to split "
    "independent work, or to keep a long search out of this conversation."
)


class SpawnArgs(NativeArgs):
    task: str = Field(min_length=1, max_length=20_000)
    tools: list[str] | None = Field(
        default=None, max_length=100,
        description='Names or patterns ("laptop__*"); default: yours but gsv__Spawn.',
    )  # fmt: skip
    model: str | None = Field(default=None, pattern=r"^[^/\s]+/\S+$")  # provider/model-id
    timeoutSeconds: int = Field(default=600, ge=10, le=3600)


class Spawner:
    """Bounds how many sub-agents run at once (the limit is read when one waits)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._running = 0
        self._changed = asyncio.Condition()

    async def run(self, args: SpawnArgs, ctx: ToolCallContext) -> dict[str, Any]:
        async with self._changed:
            await self._changed.wait_for(lambda: self._running < self._limit())
            self._running += 1
        try:
            return await self._spawn(args, ctx)
        finally:
            async with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def _limit(self) -> int:
        return int(setting(self._gateway.config.effective, "agents.maxConcurrentSpawns"))

    async def _spawn(self, args: SpawnArgs, ctx: ToolCallContext) -> dict[str, Any]:
        run_id = uuid.uuid4().hex
        key = f"agent:{ctx.agent_id}:spawn:{run_id}"
        with self._gateway.spawn_origins.spawned(key, ctx, args.task):
            return await self._run_child(key, run_id, args, ctx)

    async def _run_child(
        self, key: str, run_id: str, args: SpawnArgs, ctx: ToolCallContext
    ) -> dict[str, Any]:
        actor = await self._gateway.sessions.actor(key, kind=SPAWN_KIND)
        sent = await actor.send(args.task, run_id, overrides=_overrides(args),
                                source=ctx.run_source)  # fmt: skip
        outcome = actor.run_outcome(sent.run_id)
        try:
            async with asyncio.timeout(args.timeoutSeconds):
                final = await asyncio.shield(outcome)
        except TimeoutError:
            await actor.stop(f"timed out after {args.timeoutSeconds}s")
            raise TimedOut(f"the sub-agent did not finish within {args.timeoutSeconds}s "
                           f"(its session: {key})") from None  # fmt: skip
        except asyncio.CancelledError:  # the parent was stopped: so are its children
            await asyncio.shield(actor.stop(STOP_REASON))
            raise
        except RunFailed as exc:
            raise ToolFailed(f"the sub-agent failed: {exc.message} (its session: {key})") from None
        return {"sessionKey": key, "answer": text_of(final), "usage": final.get("usage")}


def _overrides(args: SpawnArgs) -> dict[str, Any]:
    overrides: dict[str, Any] = {"tools": args.tools or ["*"]}
    if args.model:
        provider, model_id = args.model.split("/", 1)
        overrides["model"] = {"provider": provider, "id": model_id}
    return overrides


def register(registry: NativeToolRegistry, gateway: Gateway) -> None:
    spawner = Spawner(gateway)
    registry.add(NativeTool(SPAWN_TOOL, DESCRIPTION, SpawnArgs, spawner.run))
