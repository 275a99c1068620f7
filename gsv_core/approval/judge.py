"""Judging one call in a child process: `python -m gsv_core.approval.judge` reads
{config, protected, call} as JSON on stdin and writes the Decision as JSON on stdout.

The gateway sends long shell lines here (`gsv_core.gateway.tool_router`): reading a
line of a megabyte takes most of a second of pure Python and allocates a million small
objects, and in the gateway's own process the garbage collector's pauses and the GIL
would hold up every other client meanwhile (bench/approval_parse.py measures both).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from typing import Any

from gsv_core.approval.decision import ASK
from gsv_core.approval.decision import Decision
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.protected import Protected
from gsv_core.bidi import escape_bidi


def encode_request(config: dict[str, Any], protected: Protected, call: CallFacts) -> bytes:
    return json.dumps({
        "config": {"toolApproval": config.get("toolApproval") or {}},
        "protected": {"pids": sorted(protected.pids), "secrets": sorted(protected.secret_paths)},
        "call": dataclasses.asdict(call),
    }).encode()  # fmt: skip


def judge(request: dict[str, Any]) -> Decision:
    raw = request["protected"]
    protected = Protected(frozenset(raw["pids"]), frozenset(raw["secrets"]))
    policy = ApprovalPolicy.from_config(request["config"], protected)
    return policy.decide(CallFacts(**request["call"]))


async def judge_in_child(config: dict[str, Any], protected: Protected, call: CallFacts) -> Decision:
    """The decision, computed in a child process; a child that fails makes it ask."""
    child = await start_child()
    out, err = await answer_of(child, encode_request(config, protected, call))
    if child.returncode != 0:
        return _failed(err, call)
    try:
        fields = json.loads(out)
        return Decision(**{**fields, "always": tuple(fields["always"])})
    except (ValueError, TypeError, KeyError):
        return _failed(err, call)


async def start_child() -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gsv_core.approval.judge",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def answer_of(child: asyncio.subprocess.Process, request: bytes) -> tuple[bytes, bytes]:
    """The child's output and errors for `request`. Cancelled (the run stopped), the child
    is killed and reaped before the cancel goes on: a child left unreaped keeps its
    transport open past its event loop, and it surfaces later as a ResourceWarning."""
    try:
        return await child.communicate(request)
    except asyncio.CancelledError:
        child.kill()
        await child.wait()  # at once after SIGKILL
        raise


def _failed(err: bytes, call: CallFacts) -> Decision:
    """Ask, showing the line itself: the owner must still see what would run."""
    detail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
    command = call.args.get("command")
    summary = escape_bidi(command) if isinstance(command, str) else call.bare
    return Decision(ASK, f"could not judge the command ({detail[0]})", None, summary)


def main() -> None:
    decision = judge(json.load(sys.stdin))
    fields = dataclasses.asdict(decision)
    fields["always"] = list(decision.always)
    sys.stdout.write(json.dumps(fields))


if __name__ == "__main__":
    main()
