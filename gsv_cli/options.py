"""Options many commands take, declared once so they are spelled, explained and parsed
the same everywhere (`gsv <group> <command> --json` means one thing)."""

from __future__ import annotations

from typing import Annotated

import typer

# the command's own --json; the global `gsv --json` means the same (CliState.wants_json)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (for scripts).")]
AgentOpt = Annotated[
    str | None, typer.Option("--agent", "-a", help="Agent id (default: the default agent).")
]


def agent_params(agent: str | None) -> dict[str, str]:
    """The params naming an agent; none at all leaves the choice to the gateway."""
    return {"agentId": agent} if agent else {}
