"""The system prompt, assembled before every model call. Sections are joined
with a rule; empty ones are dropped. Order: base prompt, tooling, tool call style,
safety, the workspace sections (workspace, injected files, commissioning or normal-mode
files, heartbeats: built by `gsv_core.workspace.prompt` and passed in
`PromptInputs.workspace_sections`), the skills section, runtime.

The skills section is a hook: whoever builds the skills list puts its text in
`PromptInputs.skills_section`; it is left out while the agent is being commissioned."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gsv_core.agent.tools import SEARCH_TOOL
from gsv_core.protocol.schemas.nodes import MCP_PREFIX
from gsv_core.protocol.schemas.nodes import is_mcp_name
from gsv_core.providers.base import ToolSpec

DEFAULT_BASE_PROMPT = "You are a helpful personal AI agent running inside gsv."
SEPARATOR = "\n\n---\n\n"
NATIVE_PREFIX = "gsv__"
# Gateway tools most turns do not need: left out of the request while gsv__ToolSearch is
# offered (gsv_core/gateway/tool_search.py) and named here, with what each is for, so the
# model knows to find one (the search returns its schema; the next step can call it).
ON_DEMAND = {
    "Cron": "reminders and scheduled jobs",
    "Message": "send to a channel or user",
    "SessionsList": "other sessions",
    "SessionSend": "other sessions",
    "Spawn": "sub-agents for parallel work",
    "Transfer": "copy files between nodes and workspace",
    "ConfigGet": "the gateway's config",
    "LogsGet": "a node's logs",
}
ON_DEMAND_NAMES = frozenset(NATIVE_PREFIX + name for name in ON_DEMAND)  # as tools are named
# said once here rather than in every path parameter of every node's tools
NODE_FAMILIES = "shell, files and search on that machine; relative paths start in its workspace"


@dataclass
class PromptInputs:
    agent_id: str
    session_key: str
    main_session: bool
    model: tuple[str, str]
    tools: list[ToolSpec]
    base_prompt: str | None = None
    timezone: str = "UTC"
    nodes: list[dict[str, Any]] = field(default_factory=list)  # nodes.list entries
    channel: str | None = None
    workspace_sections: list[str] = field(default_factory=list)
    commissioning: bool = False  # BOOTSTRAP.md exists: first-run mode, no skills section
    skills_section: str = ""
    # the ON_DEMAND tools this run may call (a sub-agent: those its tool subset names)
    on_demand: list[str] = field(default_factory=lambda: list(ON_DEMAND))
    # a guest's run (gsv_core/authority.py): its folder; it is told nothing of the
    # owner's files, memory or machines
    guest_area: str | None = None


def build_system_prompt(inputs: PromptInputs) -> str:
    sections = [
        (inputs.base_prompt or DEFAULT_BASE_PROMPT).strip(),
        _tooling(inputs.tools, inputs.on_demand),
        TOOL_STYLE,
        SAFETY,
        *inputs.workspace_sections,
        "" if inputs.commissioning else inputs.skills_section,
        _runtime(inputs),
    ]
    return SEPARATOR.join(section for section in sections if section.strip())


TOOL_STYLE = """## Tool Call Style
- Do not narrate routine tool calls; just make them.
- Say what you are doing when it helps the user follow a longer or risky piece of work.
- After using tools, tell the user the outcome, not the steps."""

SAFETY = """## Safety
- You have no goals of your own beyond helping your user.
- Never work around safeguards, approvals or access controls.
- Ask before destructive or irreversible actions when the request is ambiguous."""


def _tooling(tools: list[ToolSpec], on_demand: list[str]) -> str:
    """The tools by family, names only: each one's description and parameters already
    travel with it in the request (repeating them here cost about 2 kB a turn)."""
    lines = ["## Tooling", "Tool names are case-sensitive; call tools exactly as listed."]
    if not tools:
        lines.append("No tools are attached to this run.")
        return "\n".join(lines)
    native = [t.name.removeprefix(NATIVE_PREFIX) for t in tools if t.name.startswith(NATIVE_PREFIX)]
    by_node: dict[str, list[str]] = {}
    by_server: dict[str, list[str]] = {}
    for tool in tools:
        if tool.name.startswith(NATIVE_PREFIX):
            continue
        mcp = is_mcp_name(tool.name)
        owner, sep, name = tool.name.removeprefix(MCP_PREFIX if mcp else "").partition("__")
        if sep:
            (by_server if mcp else by_node).setdefault(owner, []).append(name)
    if native:
        lines.append(f"Gateway tools (`gsv__<Tool>`): {', '.join(native)}")
    findable = _on_demand([n for n in on_demand if n not in native])
    if findable and SEARCH_TOOL in (t.name for t in tools):
        lines.append(findable)
    if by_node:
        nodes = "; ".join(f"{node}: {', '.join(names)}" for node, names in by_node.items())
        lines.append(f"Node tools (`<nodeId>__<Tool>`: {NODE_FAMILIES}): {nodes}")
    if by_server:
        servers = "; ".join(f"{name}: {', '.join(found)}" for name, found in by_server.items())
        lines.append(f"MCP server tools (`mcp_<server>__<tool>`): {servers}")
    return "\n".join(lines)


def _on_demand(names: list[str]) -> str:
    """The line naming the gateway tools a search finds, grouped by purpose."""
    by_use: dict[str, list[str]] = {}
    for name in names:
        if name in ON_DEMAND:
            by_use.setdefault(ON_DEMAND[name], []).append(name)
    if not by_use:
        return ""
    tools = "; ".join(f"{', '.join(names)} ({use})" for use, names in by_use.items())
    return f"More gateway tools, found with {SEARCH_TOOL}: {tools}"


def _runtime(inputs: PromptInputs) -> str:
    provider, model = inputs.model
    lines = [
        "## Runtime",
        f"Agent: {inputs.agent_id}",
        f"Session: {'main' if inputs.main_session else 'non-main'}",
        f"Session key: {inputs.session_key}",
        f"Model: {provider}/{model}",
        f"Timezone: {inputs.timezone}",
    ]
    if inputs.channel:
        lines.append(f"Channel: {inputs.channel}")
    online = [n for n in inputs.nodes if n.get("online")]
    listed = {tool.name.partition("__")[0] for tool in inputs.tools}
    lines.append(
        f"Known nodes: {len(inputs.nodes)} (online: {len(online)}, "
        f"offline: {len(inputs.nodes) - len(online)})"
    )
    if inputs.nodes:
        lines.append("Node inventory:")
        for node in inputs.nodes:
            state = "online" if node.get("online") else "offline"
            platform = f", platform={node['platform']}" if node.get("platform") else ""
            line = f"- {node['nodeId']} ({state}{platform})"
            if node["nodeId"] not in listed:  # else the Tooling section names its tools
                line += f" tools=[{', '.join(node.get('tools', [])) or 'none'}]"
            lines.append(line)
    return "\n".join(lines)
