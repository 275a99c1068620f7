"""`gsv skills ...`: which skills the agent can use, on which node, and why not.

    list [--agent ID] | status [AGENT] | update [AGENT] [--force] [--timeout S] | show NAME

`status` shows the connected nodes (OS, capabilities, binaries found by probes) and each
skill with the nodes it works on or the reasons it does not; `update` probes the nodes
for binaries first (`--force`: even when their answers are fresh). Every command takes
`--json` and then prints the gateway's result as is.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli import reads
from gsv_cli.apps import plain_app
from gsv_cli.options import AgentOpt
from gsv_cli.options import JsonOpt
from gsv_cli.options import agent_params

app = plain_app(
    help="Skills: which ones the agent can use on which node, and why not.",
    no_args_is_help=True,
)

AgentArg = Annotated[
    str | None, typer.Argument(metavar="[AGENT]", help="Agent id (default: the default agent).")
]


@app.command("list")
def list_skills(ctx: typer.Context, agent: AgentOpt = None, json_output: JsonOpt = False) -> None:
    """List the agent's skills: usable or not, where each comes from, what it is for."""
    from gsv_core.protocol.methods import SKILLS_STATUS

    params = agent_params(agent)
    reads.show_listing(ctx.obj, SKILLS_STATUS, params, "skills", json_output, _print_skills)


def _print_skills(skills: list[dict[str, Any]]) -> None:
    rows = [
        [s["name"], "yes" if s["eligible"] else "no", _source(s["location"]), s["description"]]
        for s in skills
    ]
    output.print_table(["skill", "usable", "from", "description"], rows, empty=NO_SKILLS)


@app.command("status")
def status(ctx: typer.Context, agent: AgentArg = None, json_output: JsonOpt = False) -> None:
    """Show the connected nodes and, per skill, the nodes it works on or why not."""
    from gsv_core.protocol.methods import SKILLS_STATUS

    reads.show(ctx.obj, SKILLS_STATUS, agent_params(agent), json_output, _print_status)


@app.command("update")
def update(
    ctx: typer.Context,
    agent: AgentArg = None,
    force: Annotated[
        bool, typer.Option("--force", help="Probe every node, even with fresh answers.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, max=120, help="Seconds to wait for each node.")
    ] = 15,
    json_output: JsonOpt = False,
) -> None:
    """Probe the nodes for the binaries skills need, then show the status."""
    from gsv_core.protocol.methods import SKILLS_UPDATE

    params = {**agent_params(agent), "force": force, "timeoutMs": int(timeout * 1000)}
    reads.show(ctx.obj, SKILLS_UPDATE, params, json_output, _print_update, timeout=timeout + 30)


def _print_update(result: dict[str, Any]) -> None:
    skipped = ", ".join(result["skippedNodeIds"]) or "none"
    output.write_text(f"probed {result['updatedNodeCount']} node(s); skipped: {skipped}\n")
    for error in result["errors"]:
        output.print_error(f"probe failed: {error}")
    output.write_text("\n")
    _print_status(result)


@app.command("show")
def show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Skill name.")],
    agent: AgentOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Print a skill's SKILL.md (the agent's own copy if it has one)."""
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.errors import NotFound
    from gsv_core.protocol.methods import SKILLS_STATUS
    from gsv_core.protocol.methods import WORKSPACE_READ

    async def fetch() -> dict[str, Any]:
        async with gateway_client(ctx.obj) as client:
            status = await client.call(SKILLS_STATUS, agent_params(agent))
            found = [s for s in status["skills"] if s["name"] == name]
            if not found:
                raise NotFound(f"no skill named {name!r}; `gsv skills list` shows them")
            read = {**agent_params(agent), "path": read_path(found[0]["location"])}
            file = await client.call(WORKSPACE_READ, read)
            return {**found[0], "content": file["content"]}

    skill = run(fetch)
    if ctx.obj.wants_json(json_output):
        output.print_json(skill)
        return
    content = skill["content"]
    output.write_content(content if content.endswith("\n") else content + "\n")


NO_SKILLS = "no skills yet: add one as skills/<name>/SKILL.md with `gsv workspace put`"


def read_path(location: str) -> str:
    """The workspace path of a skill's storage key: `agents/{id}/skills/...` and
    `skills/...` are both read as `skills/...` (own copy first)."""
    parts = location.split("/")
    return "/".join(parts[2:]) if parts[0] == "agents" and len(parts) > 2 else location


def _source(location: str) -> str:
    return "agent" if location.startswith("agents/") else "global"


def _print_status(result: dict[str, Any]) -> None:
    output.write_text(f"agent {result['agentId']}\n\nnodes:\n")
    node_rows = [
        [
            node["nodeId"],
            node.get("hostOs") or "-",
            ", ".join(node["hostCapabilities"]) or "-",
            ", ".join(b for b in node["hostBins"] if b in result["requiredBins"]) or "-",
            output.when(node.get("hostBinStatusUpdatedAt")),
        ]
        for node in result["nodes"]
    ]
    columns = ["node", "os", "capabilities", "skill bins found", "probed"]
    output.print_table(columns, node_rows, empty="(no connected nodes)")
    output.write_text("\nskills:\n")
    skill_rows = [_skill_row(skill) for skill in result["skills"]]
    output.print_table(["skill", "usable", "on", "why not"], skill_rows, empty=NO_SKILLS)


def _skill_row(skill: dict[str, Any]) -> list[str]:
    if not skill["eligible"]:
        return [skill["name"], "no", "-", "\n".join(skill["reasons"])]
    hosts = ", ".join(skill["eligibleHosts"])
    needs_nodes = any(skill["requirements"].values())
    on = hosts or ("-" if needs_nodes else "any (needs no node)")
    return [skill["name"], "always" if skill["always"] else "yes", on, ""]
