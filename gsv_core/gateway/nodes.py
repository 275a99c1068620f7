"""The node registry: which nodes are online with which tools, the catalog of nodes seen
before, and the calls in flight to them (tool calls, log fetches, bin probes).

A call is a future keyed by a fresh id; the node answers with `tool.result`, `logs.result`
or `node.probe.result`, which resolves it. Callers await `invoke()` / `fetch_logs()` /
`probe_bins()` within a deadline (`asyncio.timeout`). A node that disconnects, is
replaced by a newer connection or is forgotten fails its calls at once with 503.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pydantic import ValidationError

from gsv_core.approval.binding import new_key
from gsv_core.approval.binding import sign
from gsv_core.approval.policy import node_may_ask
from gsv_core.errors import Conflict
from gsv_core.errors import Forbidden
from gsv_core.errors import InvalidParams
from gsv_core.errors import NotFound
from gsv_core.errors import TimedOut
from gsv_core.errors import ToolFailed
from gsv_core.errors import Unavailable
from gsv_core.gateway.node_tools import SharedTool
from gsv_core.gateway.node_tools import ToolShelf
from gsv_core.protocol import events
from gsv_core.protocol.close_codes import CloseCode
from gsv_core.protocol.schemas.connect import ToolDefinition
from gsv_core.protocol.schemas.nodes import BIN_NAME
from gsv_core.protocol.schemas.nodes import TOOL_SEPARATOR
from gsv_core.protocol.schemas.nodes import LogsGetResult
from gsv_core.protocol.schemas.nodes import LogsResultParams
from gsv_core.protocol.schemas.nodes import NodeForgetResult
from gsv_core.protocol.schemas.nodes import NodeInfo
from gsv_core.protocol.schemas.nodes import NodeProbeResultParams
from gsv_core.protocol.schemas.nodes import NodeRuntime
from gsv_core.protocol.schemas.nodes import split_tool_name
from gsv_core.rpc.context import Peer
from gsv_core.storage.nodes import NodeRecord
from gsv_core.storage.nodes import NodeStore

log = logging.getLogger(__name__)

# how long the old connection of a reconnecting node may take to answer a ping
TAKEOVER_PROBE_S = 3.0

MAX_LOG_LINES = 5000
# Calls whose caller stopped waiting (timeout, client gone) are remembered a while, so a
# late answer is acknowledged as dropped instead of refused as unknown.
ABANDONED_KEEP = 4096


@dataclass
class OnlineNode:
    peer: Peer
    # the definitions kept once for every node offering them (node_tools.py)
    shared: list[SharedTool]
    runtime: NodeRuntime
    # signs approval bindings for this connection (sent to the node in hello-ok)
    approval_key: str = field(default_factory=new_key)

    def __post_init__(self) -> None:
        self.tools = [tool.definition for tool in self.shared]
        self._names = frozenset(tool.name for tool in self.tools)  # looked up per call

    def has_tool(self, name: str) -> bool:
        return name in self._names


@dataclass
class _Call:
    node_id: str
    kind: str  # "tool" | "logs" | "probe"
    future: asyncio.Future[Any] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class NodeService:
    """Online nodes, their catalog and their pending calls."""

    def __init__(self, store: NodeStore, now_ms: Callable[[], int]) -> None:
        self._store = store
        self._now = now_ms
        self._online: dict[str, OnlineNode] = {}
        # built once per change of who is online, not per tools.list or per turn
        self._definitions: list[ToolDefinition] | None = None
        self._json: str | None = None
        self._shelf = ToolShelf()
        self._catalog: dict[str, NodeRecord] = {}
        self._calls: dict[str, _Call] = {}
        self._abandoned: OrderedDict[str, tuple[str, str]] = OrderedDict()
        # call ids: unique per gateway run and across restarts, without a uuid4 syscall
        self._id_prefix = new_key()[:12]
        self._ids = itertools.count(1)

    async def load(self) -> None:
        self._catalog = {record.node_id: record for record in await self._store.list()}

    # -- presence -----------------------------------------------------------------------
    def online(self, node_id: str) -> OnlineNode | None:
        return self._online.get(node_id)

    def expected_back(self) -> set[str]:
        """The nodes connected when the gateway last stopped: still marked connected (a
        crash), or disconnected by the stop itself (within seconds of the last disconnect)."""
        records = list(self._catalog.values())
        ended = [r.last_disconnected_at for r in records if r.last_disconnected_at is not None]
        stop = max(ended, default=0)
        return {
            r.node_id
            for r in records
            if (r.last_connected_at or 0) > (r.last_disconnected_at or 0)
            or (r.last_disconnected_at is not None and r.last_disconnected_at >= stop - 10_000)
        }

    def online_ids(self) -> list[str]:
        return sorted(self._online)

    def online_nodes(self) -> list[OnlineNode]:
        return list(self._online.values())

    async def attach(
        self,
        peer: Peer,
        node_id: str,
        tools: list[ToolDefinition],
        runtime: NodeRuntime,
        client: tuple[str, str],
        accept: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Register a connected node. A node id that is connected on another socket is not
        taken over while that socket answers a ping (its calls and results stay with it):
        the newcomer hears 409. A silent old socket (a dropped network) is closed instead,
        so a node that reconnects is back at once, not after the keepalive's timeout.
        `accept` (spending a join code) runs once the id is free to take: what it raises
        refuses the newcomer with nothing changed."""
        old = self._online.get(node_id)
        live = old is not None and old.peer is not peer and old.peer.connected
        if old is not None and live and await old.peer.alive(TAKEOVER_PROBE_S):
            log.warning("refused a second connection for node %s from %s",
                        node_id, peer.remote)  # fmt: skip
            raise Conflict(
                f"node {node_id} is already connected: a second connection cannot take "
                "its place. Stop the other one first"
            )
        if accept is not None:
            await accept()
            old = self._online.get(node_id)  # as it is now: accepting took a moment
        if old is not None and old.peer is not peer and old.peer.connected:
            self._fail_calls(node_id, f"Node reconnected during {{kind}} request: {node_id}")
            old.peer.close(CloseCode.GOING_AWAY, "Silent; the node reconnected")
            log.info("node %s reconnected; its silent old connection is closed", node_id)
        shared = self._shelf.share(tools)
        self._online[node_id] = OnlineNode(peer, shared, runtime)
        self._online_changed()
        now = self._now()
        previous = self._catalog.get(node_id)
        record = NodeRecord(
            node_id=node_id,
            tools=[tool.wire for tool in shared],
            runtime=runtime.to_wire(),
            platform=client[0],
            version=client[1],
            first_seen_at=previous.first_seen_at if previous else now,
            last_seen_at=now,
            last_connected_at=now,
            last_disconnected_at=previous.last_disconnected_at if previous else None,
        )
        self._catalog[node_id] = record
        await self._store.connected(record)

    async def detach(self, peer: Peer) -> None:
        """A socket closed: if it is a node's current one, the node goes offline."""
        node_id = peer.peer_id
        if (
            node_id is None
            or (entry := self._online.get(node_id)) is None
            or entry.peer is not peer
        ):
            return  # not a node, or a stale socket already replaced
        del self._online[node_id]
        self._online_changed()
        self._fail_calls(node_id, f"Node disconnected: {node_id}")
        now = self._now()
        if (record := self._catalog.get(node_id)) is not None:
            record.last_seen_at = record.last_disconnected_at = now
        await self._store.disconnected(node_id, now)
        log.info("node %s disconnected", node_id)

    async def forget(self, node_id: str, force: bool) -> NodeForgetResult:
        entry = self._online.get(node_id)
        if entry is not None and not force:
            raise Conflict(
                f"Node {node_id} is still connected (use force=true to disconnect and forget)"
            )
        disconnected = False
        if entry is not None:
            del self._online[node_id]
            self._online_changed()
            entry.peer.close(CloseCode.NORMAL_CLOSURE, "Forgotten from node registry")
            disconnected = True
        self._fail_calls(node_id, f"Node removed from registry: {node_id}")
        known = self._catalog.pop(node_id, None) is not None
        removed = await self._store.delete(node_id) or known or disconnected
        return NodeForgetResult(nodeId=node_id, removed=removed, disconnected=disconnected)

    # -- inventory ----------------------------------------------------------------------
    def _online_changed(self) -> None:
        self._definitions = self._json = None

    def tool_definitions(self) -> list[ToolDefinition]:
        """Tools of connected nodes, nodes sorted by id, named `{nodeId}__{tool}`."""
        if self._definitions is None:
            self._definitions = [
                tool.model_copy(update={"name": f"{node_id}{TOOL_SEPARATOR}{tool.name}"})
                for node_id in sorted(self._online)
                for tool in self._online[node_id].tools
            ]
        return list(self._definitions)

    def tools_json(self) -> str:
        """`tool_definitions()` as `tools.list` items, encoded and comma-joined ("" when
        no node offers a tool): only the names are encoded again after a change."""
        if self._json is None:
            self._json = ",".join(
                tool.item(node_id)
                for node_id in sorted(self._online)
                for tool in self._online[node_id].shared
            )
        return self._json

    def inventory(self) -> list[NodeInfo]:
        """Every known node (online or from the catalog), sorted by id."""
        return [self._info(node_id) for node_id in sorted(set(self._catalog) | set(self._online))]

    def _info(self, node_id: str) -> NodeInfo:
        record = self._catalog.get(node_id)
        entry = self._online.get(node_id)
        if entry is not None:
            runtime: NodeRuntime | None = entry.runtime
            tools = [tool.name for tool in entry.tools]
        else:
            runtime = _stored_runtime(record)
            tools = [str(tool.get("name")) for tool in record.tools] if record else []
        return NodeInfo(
            nodeId=node_id,
            online=entry is not None,
            platform=record.platform if record else None,
            version=record.version if record else None,
            tools=sorted(tools),
            hostCapabilities=runtime.hostCapabilities if runtime else [],
            hostOs=runtime.hostOs if runtime else None,
            firstSeenAt=record.first_seen_at if record else None,
            lastSeenAt=record.last_seen_at if record else None,
            lastConnectedAt=record.last_connected_at if record else None,
            lastDisconnectedAt=record.last_disconnected_at if record else None,
            sandbox=runtime.sandbox if runtime else None,
        )

    # -- calls --------------------------------------------------------------------------
    def _new_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    def resolve_tool(self, name: str) -> tuple[str, OnlineNode, str]:
        """(nodeId, node, bare tool name) for `{nodeId}__{tool}`; 404 when nobody has it."""
        parts = split_tool_name(name)
        entry = self._online.get(parts[0]) if parts else None
        if parts is None or entry is None or not entry.has_tool(parts[1]):
            raise NotFound(f"No node provides tool: {name}")
        return parts[0], entry, parts[1]

    async def invoke(
        self,
        name: str,
        args: dict[str, Any],
        timeout: float,
        call_id: str | None = None,
        *,
        access: str | None = None,
    ) -> Any:
        """Run a namespaced node tool and return its raw result. `access` (SANDBOX or
        FULL, approval/binding.py) attaches an approval binding signed for exactly this
        call and that access when the node's standard policy could ask about it (the node
        checks it); None: no binding.

        404 unknown tool, 503 node gone (before or during the call), 504 after `timeout`
        seconds, ToolFailed with the node's message when the tool itself failed.
        """
        call_id, call = self._start_tool(name, args, call_id, access)
        return await self._wait(call_id, call, timeout, "Tool request timed out")

    def _start_tool(
        self, name: str, args: dict[str, Any], call_id: str | None, access: str | None
    ) -> tuple[str, _Call]:
        node_id, entry, tool = self.resolve_tool(name)
        call_id = call_id or self._new_id()
        payload: dict[str, Any] = {"callId": call_id, "tool": tool, "args": args}
        if access is not None and node_may_ask(tool, args):
            payload["approval"] = sign(entry.approval_key, tool, args, "allow", access)
        return call_id, self._start(
            call_id, node_id, "tool", entry.peer, events.TOOL_INVOKE, payload
        )

    def deliver_tool_result(self, peer: Peer, call_id: str, result: Any, error: str | None) -> bool:
        """A node's `tool.result`; returns True when nobody waits for it any more."""
        call = self._owned_call(peer, call_id, "tool")
        if error is not None:
            return _settle(call, exception=ToolFailed(error))
        return _settle(call, result=result)

    async def fetch_logs(self, node_id: str | None, lines: int, timeout: float) -> LogsGetResult:
        target = self._log_target(node_id)
        call_id = self._new_id()
        count = min(max(1, lines), MAX_LOG_LINES)
        payload = {"callId": call_id, "lines": count}
        call = self._start(
            call_id, target, "log", self._online[target].peer, events.LOGS_GET, payload
        )
        message = f"logs.get timed out after {int(timeout * 1000)}ms"
        params: LogsResultParams = await self._wait(call_id, call, timeout, message)
        return LogsGetResult(
            nodeId=target,
            lines=params.lines,
            count=len(params.lines),
            truncated=params.truncated,
        )

    def _log_target(self, node_id: str | None) -> str:
        if node_id is not None:
            if node_id not in self._online:
                raise Unavailable(f"Node not connected: {node_id}")
            return node_id
        if not self._online:
            raise Unavailable("No nodes connected")
        if len(self._online) > 1:
            raise InvalidParams("nodeId required when multiple nodes are connected")
        return next(iter(self._online))

    def deliver_logs(self, peer: Peer, params: LogsResultParams) -> bool:
        call = self._owned_call(peer, params.callId, "log")
        if params.error is not None:
            return _settle(call, exception=ToolFailed(params.error))
        return _settle(call, result=params)

    async def probe_bins(self, node_id: str, bins: list[str], timeout: float) -> dict[str, bool]:
        """Ask a node which of `bins` are on its PATH (`node.probe`, kind bins)."""
        entry = self._online.get(node_id)
        if entry is None:
            raise Unavailable(f"Node not connected: {node_id}")
        bad = [name for name in bins if not BIN_NAME.match(name)]
        if bad:
            raise InvalidParams(f"invalid binary name for a probe: {bad[0]!r}")
        probe_id = self._new_id()
        payload = {
            "probeId": probe_id,
            "kind": "bins",
            "bins": bins,
            "timeoutMs": int(timeout * 1000),
        }
        call = self._start(probe_id, node_id, "probe", entry.peer, events.NODE_PROBE, payload)
        message = f"node.probe timed out for node {node_id}"
        params: NodeProbeResultParams = await self._wait(probe_id, call, timeout, message)
        return {name: bool(params.bins.get(name, False)) for name in bins}

    def deliver_probe(self, peer: Peer, params: NodeProbeResultParams) -> bool:
        call = self._owned_call(peer, params.probeId, "probe")
        if not params.ok:
            return _settle(call, exception=ToolFailed(params.error or "probe failed"))
        return _settle(call, result=params)

    # -- plumbing -----------------------------------------------------------------------
    def _start(
        self, call_id: str, node_id: str, kind: str, peer: Peer, event: str, payload: dict[str, Any]
    ) -> _Call:
        """Register a call and send it to the node."""
        if call_id in self._calls:
            raise Conflict(f"call id {call_id} is already in flight")
        call = _Call(node_id, kind)
        self._calls[call_id] = call
        peer.send_event(event, payload)
        return call

    async def _wait(self, call_id: str, call: _Call, timeout: float, message: str) -> Any:
        """The node's answer within `timeout` seconds (TimedOut with `message` after)."""
        try:
            async with asyncio.timeout(timeout):
                return await call.future
        except TimeoutError:
            raise TimedOut(message) from None
        finally:
            if self._calls.get(call_id) is call:
                del self._calls[call_id]
            # the caller gave up (timeout or cancelled): a late answer is only acknowledged
            if not call.future.done() or call.future.cancelled():
                self._abandon(call_id, call)

    def _abandon(self, call_id: str, call: _Call) -> None:
        self._abandoned[call_id] = (call.node_id, call.kind)
        entry = self._online.get(call.node_id)
        if call.kind == "tool" and entry is not None:  # stop the work nobody waits for
            entry.peer.send_event(events.TOOL_CANCEL, {"callId": call_id})
        while len(self._abandoned) > ABANDONED_KEEP:
            self._abandoned.popitem(last=False)

    def _owned_call(self, peer: Peer, call_id: str, kind: str) -> _Call | None:
        """The pending call a node answers: 404 unknown, 403 from any socket but the
        current connection of the node the call was sent to; None when abandoned."""
        call = self._calls.get(call_id)
        if call is None:
            if self._abandoned.get(call_id) == (peer.peer_id, kind):
                return None
            raise NotFound("Unknown callId")
        if call.kind != kind:
            raise NotFound("Unknown callId")
        entry = self._online.get(call.node_id)
        if entry is None or entry.peer is not peer:
            raise Forbidden("Node not authorized for this call")
        return call

    def _fail_calls(self, node_id: str, template: str) -> None:
        for call in [c for c in self._calls.values() if c.node_id == node_id]:
            _settle(call, exception=Unavailable(template.format(kind=call.kind)))


def _settle(
    call: _Call | None, *, result: Any = None, exception: BaseException | None = None
) -> bool:
    """Resolve a pending call; True when the answer was dropped (nobody waiting)."""
    if call is None or call.future.done():
        return True
    if exception is not None:
        call.future.set_exception(exception)
    else:
        call.future.set_result(result)
    return False


def _stored_runtime(record: NodeRecord | None) -> NodeRuntime | None:
    """The runtime saved in the catalog (None if absent or no longer valid)."""
    if record is None or record.runtime is None:
        return None
    try:
        return NodeRuntime.model_validate(record.runtime)
    except ValidationError:
        return None
