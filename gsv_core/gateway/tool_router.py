"""The gateway's ToolExecutor: every call is judged by the approval policy first; then
`gsv__*` names run in the native tool registry, `mcp_<server>__*` names on their MCP
server (docs/mcp.md) and everything else is sent to its node (under the approval policy,
docs/approvals.md). An MCP call asks unless its server marks the tool read-only.

A call the policy wants a human for pauses here: clients get a `tool.approval` event and
a `paused` chat event (which channels relay as text), and the call waits until someone
answers or the approval expires -- closed: the model gets "approval timed out" with the
command and the `gsv approvals allow ...` line that would let it run next time (what an
unattended cron or heartbeat run records). Node calls carry a binding signed for exactly
their arguments, which the node checks, and for the access granted: a call that ran
unasked runs in the node's sandbox; one the owner approved (or allowed by their own
rule) runs with full access (docs/sandbox.md).

`gsv__Transfer` is judged as what it does at each end: reading the source as a `Read` of
that path on its node, writing the destination as a `Write` of it there (asking outside
that node's workspace, refusing gsv's secrets), a workspace end as the gateway's own
workspace tools; the most cautious decision wins (docs/tools.md#gateway-native-tools).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.agent.tools import SEARCH_TOOL
from gsv_core.agent.tools import ToolCallContext
from gsv_core.approval.binding import FULL
from gsv_core.approval.binding import SANDBOX
from gsv_core.approval.decision import most_cautious
from gsv_core.approval.judge import judge_in_child
from gsv_core.approval.modes import approval_timeout
from gsv_core.approval.policy import ASK
from gsv_core.approval.policy import DENY
from gsv_core.approval.policy import ApprovalPolicy
from gsv_core.approval.policy import CallFacts
from gsv_core.approval.policy import Decision
from gsv_core.approval.protected import Protected
from gsv_core.approval.protected import protected_files
from gsv_core.approval.service import APPROVED
from gsv_core.approval.service import CANCELLED
from gsv_core.approval.service import EXPIRED
from gsv_core.approval.service import ApprovalService
from gsv_core.authority import conversation_of
from gsv_core.config import setting
from gsv_core.errors import InvalidParams
from gsv_core.errors import ToolFailed
from gsv_core.gateway.guest_reach import GuestReach
from gsv_core.gateway.native.message_tools import reaches_elsewhere
from gsv_core.gateway.native_registry import NATIVE_PREFIX
from gsv_core.gateway.native_registry import NativeToolRegistry
from gsv_core.gateway.tool_search import DEFAULT_LIMIT
from gsv_core.gateway.tool_search import FoundTools
from gsv_core.gateway.tool_search import inline_set
from gsv_core.gateway.tool_search import rank
from gsv_core.gateway.tool_search import search_spec
from gsv_core.gateway.transfers import READ
from gsv_core.gateway.transfers import WRITE
from gsv_core.gateway.transfers import Endpoint
from gsv_core.gateway.transfers import parse_endpoint
from gsv_core.mcp.names import is_mcp_name
from gsv_core.paths import resolve_paths
from gsv_core.protocol import events
from gsv_core.protocol.excerpt import excerpt
from gsv_core.protocol.sandbox_info import LEAVES_SANDBOX
from gsv_core.protocol.schemas.nodes import TOOL_SEPARATOR
from gsv_core.protocol.schemas.nodes import split_tool_name
from gsv_core.providers.base import ToolSpec
from gsv_core.providers.tool_schema import for_model

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

log = logging.getLogger(__name__)
# shell lines longer than this are judged in a child process, so the loop keeps serving
# other clients (lines over toolApproval.maxCommandBytes are not read at all)
OFF_LOOP_CHARS = 16_384
TRANSFER_TOOL = "gsv__Transfer"
MESSAGE_TOOL = "gsv__Message"
# a transfer's workspace end is judged as the gateway's own workspace tool would be
WORKSPACE_TOOLS = {READ: "gsv__ReadFile", WRITE: "gsv__WriteFile"}
# of the line, what the paused message shows (all a channel's owner sees above its Allow
# button): its start and its end around a note, so padding cannot push what a line ends
# with out of sight
PAUSED_CHARS = 400
PAUSED_WHY = "not shown here; the whole line is what runs"


class GatewayToolRouter:
    def __init__(
        self, gateway: Gateway, native: NativeToolRegistry, approvals: ApprovalService
    ) -> None:
        self._gateway = gateway
        self.native = native
        self.approvals = approvals
        # (config, protected, policy): built again only when either changes (a config
        # write replaces `config.effective`; a node coming or going changes the pids)
        self._policy: tuple[dict[str, Any], Protected, ApprovalPolicy] | None = None
        self._found = FoundTools()
        self._schemas = CompactSchemas()

    def specs(self, ctx: ToolCallContext) -> list[ToolSpec]:
        """Native tools first, then node tools (nodes sorted by id), then MCP tools (servers
        by name), as in tools.list, but the gateway tools offered on demand and, past
        `tools.inlineLimit`, all nodes' but the first: those a search found in this run
        and gsv__ToolSearch instead (gateway/tool_search.py). Schemas in the compact form
        the model gets. A guest's run is offered only its reach (guest_reach.py)."""
        native, rest = self._all_specs(self._guest(ctx))
        limit = int(setting(self._gateway.config.effective, "tools.inlineLimit"))
        offered = inline_set(native, rest, limit)
        hidden = len(native) + len(rest) - len(offered)
        if hidden:
            found = self._found.of(ctx.run_id)
            offered += [s for s in (*native, *rest) if s.name in found and s not in offered]
            offered.append(search_spec(hidden))
        return offered

    def _all_specs(self, guest: GuestReach | None = None) -> tuple[list[ToolSpec], list[ToolSpec]]:
        """(the gateway's own tools, node and MCP tools), schemas compacted; only those a
        guest may call when `guest` is given."""
        nodes = [
            ToolSpec(tool.name, tool.description, tool.inputSchema or {"type": "object"})
            for tool in self._gateway.nodes.tool_definitions()
        ]
        compact = self._schemas.compact
        native = [compact(spec) for spec in self.native.specs()]
        rest = [compact(spec) for spec in (*nodes, *self._gateway.mcp.specs())]
        self._schemas.done()
        if guest is not None:
            native = [spec for spec in native if guest.offers(spec.name)]
            rest = [spec for spec in rest if guest.offers(spec.name)]
        return native, rest

    def offers(self, name: str, ctx: ToolCallContext) -> bool:
        guest = self._guest(ctx)
        return guest is None or guest.offers(name)

    def _guest(self, ctx: ToolCallContext) -> GuestReach | None:
        """The reach of a guest's run (None: the owner's or the system's, whole)."""
        context = ctx.channel_context
        channel = str((context or {}).get("channel") or "")
        return GuestReach.of(context, self._gateway.channels.settings(channel) if channel else {})

    def _search(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        query, limit = args.get("query"), args.get("limit", DEFAULT_LIMIT)
        if not isinstance(query, str) or not query.strip() or len(query) > 200:
            raise ToolFailed("query must be a non-empty string of at most 200 characters")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 20:
            raise ToolFailed("limit must be a whole number from 1 to 20")
        native, rest = self._all_specs(self._guest(ctx))
        hits = rank(query, [*native, *rest], limit)
        self._found.add(ctx.run_id, [hit.name for hit in hits])
        tools = [{"name": hit.name, "description": hit.description, "inputSchema": hit.parameters}
                 for hit in hits]  # fmt: skip
        return {"tools": tools, "count": len(tools)}

    def find(self, names: list[str], ctx: ToolCallContext) -> None:
        """One look at the tools on offer for all the names (a sub-agent's named on-demand
        tools), not one whole search each."""
        native, rest = self._all_specs(self._guest(ctx))
        wanted = set(names)
        self._found.add(ctx.run_id, [s.name for s in (*native, *rest) if s.name in wanted])

    async def execute(self, name: str, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        if name == SEARCH_TOOL:  # reads tool descriptions only: nothing for a policy to judge
            return self._search(args, ctx)
        guest = self._guest(ctx)
        if guest is not None:  # its own folder and conversation, the owner's grants
            args = guest.confine(name, args)
        decision = await self.decide(name, args, ctx)
        if decision.verdict == DENY:
            raise ToolFailed(f"Tool execution denied by policy: {decision.reason}")
        where = conversation_of(ctx.channel_context)
        if decision.verdict == ASK and not self.approvals.remembered(
            ctx.session_key, name, args, where
        ):
            await self._ask(name, args, ctx, decision)
        # what a human approved, or the owner's own rules allowed, leaves the sandbox
        access = FULL if decision.verdict == ASK or decision.granted else SANDBOX
        if name.startswith(NATIVE_PREFIX):
            return await self.native.run(name, args, ctx)
        if is_mcp_name(name):  # under the server's own timeoutMs
            return await self._gateway.mcp.call(name, args)
        # the service's own call id: the model's tool-call ids are not unique across sessions
        return await self._gateway.nodes.invoke(
            name, args, self._gateway.tool_timeout(), access=access
        )

    async def decide(
        self, name: str, args: dict[str, Any], ctx: ToolCallContext | None = None
    ) -> Decision:
        """The policy's decision on a call; with the caller's context, a gsv__Message is
        judged knowing whether it leaves the calling conversation (without it, it is
        taken to)."""
        policy, facts = self.policy(), self._facts(name, args)
        if name == MESSAGE_TOOL:
            facts = replace(
                facts, elsewhere=ctx is None or reaches_elsewhere(self._gateway, args, ctx)
            )
        if name == TRANSFER_TOOL:
            return self._transfer_decision(policy, facts)
        if _long_line(args) and not policy.too_long(facts):
            return await judge_in_child(self._gateway.config.effective, policy.protected, facts)
        return policy.decide(facts)

    def policy(self) -> ApprovalPolicy:
        """The policy for the config and processes of this moment, built once per change
        of either (its rules, presets and per-tool index are reused between calls)."""
        config, protected = self._gateway.config.effective, self.protected()
        cached = self._policy
        if cached is None or cached[0] is not config or cached[1] != protected:
            cached = self._policy = (
                config,
                protected,
                ApprovalPolicy.from_config(config, protected),
            )
        return cached[2]

    def protected(self) -> Protected:
        """This gateway's own processes and files (nodes guard their own, too)."""
        paths = resolve_paths()
        database = self._gateway.db.path
        pids = {os.getpid()} | {
            n.runtime.pid for n in self._gateway.nodes.online_nodes() if n.runtime.pid
        }
        return protected_files(paths, database, pids)

    def _facts(self, name: str, args: dict[str, Any]) -> CallFacts:
        parts = split_tool_name(name)
        if is_mcp_name(name):  # judged by the annotations its server gives it now
            return CallFacts(name, name, None, args, read_only=self._gateway.mcp.read_only(name))
        if name.startswith(NATIVE_PREFIX) or parts is None:
            return CallFacts(name, name, None, args)
        return self._node_facts(parts[0], parts[1], args)

    def _node_facts(self, node_id: str, bare: str, args: dict[str, Any]) -> CallFacts:
        node = self._gateway.nodes.online(node_id)
        workspace = node.runtime.workspace if node is not None else None
        sandbox = node.runtime.sandbox if node is not None else None
        return CallFacts(f"{node_id}{TOOL_SEPARATOR}{bare}", bare, node_id, args, workspace,
                         sandboxed=sandbox is not None and sandbox.active)  # fmt: skip

    def _transfer_decision(self, policy: ApprovalPolicy, call: CallFacts) -> Decision:
        """A transfer's own rules, then reading its source and writing its destination,
        each judged where it happens; the most cautious decision wins."""
        decision = policy.decide(call)
        source, destination = call.args.get("source"), call.args.get("destination")
        if not isinstance(source, str) or not isinstance(destination, str):
            return decision  # refused by the tool's own validation, before anything runs
        try:
            ends = (("source", READ, parse_endpoint(source)),
                    ("destination", WRITE, parse_endpoint(destination)))  # fmt: skip
        except InvalidParams:
            return decision  # the transfer refuses it before touching either end
        for role, tool, end in ends:
            judged = policy.decide(self._end_facts(tool, end))
            if most_cautious(decision, judged) is judged:
                decision = replace(judged, reason=f"{role} {end}: {judged.reason}")
        return replace(decision, summary=f"Transfer {ends[0][2]} -> {ends[1][2]}")

    def _end_facts(self, tool: str, end: Endpoint) -> CallFacts:
        """One end of a transfer as the call that does the same there."""
        args = {"path": end.path}
        if end.in_workspace:  # confined to the agent's folder, as the workspace tools are
            native = WORKSPACE_TOOLS[tool]
            return CallFacts(native, native, None, args)
        return self._node_facts(end.node, tool, args)

    async def _ask(
        self, name: str, args: dict[str, Any], ctx: ToolCallContext, decision: Decision
    ) -> None:
        """Pause the call until a human answers; raise unless they approved in time."""
        timeout = approval_timeout(self._gateway.config.effective)
        # a sub-agent asks in the conversation that spawned it, whose chat it has not
        origin = self._gateway.spawn_origins.of(ctx.session_key)
        asked_in, channel_context = ctx.session_key, ctx.channel_context
        if origin is not None:
            asked_in, channel_context = origin.session_key, origin.channel_context
        approval = self.approvals.open(ctx.session_key, ctx.run_id, ctx.call_id, name, args,
                                       decision, timeout, asked_in=asked_in,
                                       where=conversation_of(channel_context))  # fmt: skip
        emit = self._gateway.sessions.host.emit
        emit(events.TOOL_APPROVAL, approval.to_wire())
        prompt = _prompt(approval.id, name, decision, timeout, origin.describe() if origin else "")
        paused: dict[str, Any] = {
            "runId": ctx.run_id, "sessionKey": ctx.session_key, "state": "paused",
            "approvalId": approval.id, "message": prompt,
        }  # fmt: skip
        if channel_context:
            paused["channelContext"] = channel_context
        emit(events.CHAT, paused)
        try:
            outcome = await self.approvals.wait(approval)
        except asyncio.CancelledError:  # the run was stopped: clients drop the prompt
            emit(events.TOOL_APPROVAL, approval.to_wire(CANCELLED))
            raise
        emit(events.TOOL_APPROVAL, approval.to_wire(outcome))
        if outcome == EXPIRED:
            raise ToolFailed(_expired(decision, timeout))
        if outcome != APPROVED:
            raise ToolFailed("Tool execution denied by user")


class CompactSchemas:
    """Each tool's spec with its schema in the model's form (`tool_schema.for_model`),
    made once per schema: a node's, a native tool's and an MCP server's schema objects
    live as long as their tool is registered (a node that reconnects brings new ones), so
    a turn only looks them up, and gets the same spec object each time (the provider
    keeps the tools' JSON while they stay the same, providers/chat_request.py). Entries
    of schemas not seen in the last pass are dropped."""

    def __init__(self) -> None:
        # id(schema) -> (schema, compacted spec); holding the schema keeps its id unique
        self._known: dict[int, tuple[dict[str, Any], ToolSpec]] = {}
        self._seen: dict[int, tuple[dict[str, Any], ToolSpec]] = {}

    def compact(self, spec: ToolSpec) -> ToolSpec:
        schema = spec.parameters
        entry = self._seen.get(id(schema)) or self._known.get(id(schema))
        if entry is None or entry[0] is not schema:
            entry = (schema, replace(spec, parameters=for_model(schema)))
        elif (entry[1].name, entry[1].description) != (spec.name, spec.description):
            entry = (schema, replace(spec, parameters=entry[1].parameters))
        self._seen[id(schema)] = entry
        return entry[1]

    def done(self) -> None:
        """The end of a pass over every tool: forget the schemas it did not meet."""
        self._known, self._seen = self._seen, {}


def _long_line(args: dict[str, Any]) -> bool:
    line = args.get("command", args.get("data"))
    return isinstance(line, str) and len(line) > OFF_LOOP_CHARS


def _cut(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _prompt(
    approval_id: str, tool: str, decision: Decision, timeout: float, asker: str = ""
) -> dict[str, Any]:
    """The paused message: what waits, who asks (a sub-agent says so), why, and how to
    answer."""
    rules = ", ".join(decision.always)
    always = f', "always" to also allow {rules} from now on,' if rules else ""
    head = f"Approval needed ({approval_id}): {tool}" + (f"\n{asker}" if asker else "")
    leaves = f"{LEAVES_SANDBOX}\n" if decision.leaves_sandbox else ""
    text = (
        f"{head}\n{excerpt(decision.summary, PAUSED_CHARS, PAUSED_WHY)}\n"
        f"Why: {decision.reason}\n{leaves}"
        f'Reply "yes" to run it once{always} or "no" to refuse '
        f"(expires in {int(timeout // 60) or 1} min)."
    )
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def _expired(decision: Decision, timeout: float) -> str:
    """What the model (and the run's record) reads when nobody answered."""
    text = (
        f"approval timed out: nobody answered within {timeout:g} seconds: {_cut(decision.summary)}"
    )
    if decision.always:
        allow = "; ".join(f"gsv approvals allow {rule}" for rule in decision.always)
        return f"{text}. To let it run without asking next time: {allow}"
    return text
