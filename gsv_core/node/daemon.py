"""The node daemon: connect to a gateway in `node` mode, advertise this machine's tools,
and serve what the gateway asks (`tool.invoke`, `logs.get`, `node.probe`).

It survives anything: a refused connect, a bad token, a gateway restart or a dead
network all lead to a logged reason and a reconnect with jittered exponential backoff
(capped at 30 s); every reconnect repeats the handshake, so the tools reappear. A dead
network is noticed by the heartbeat's unacknowledged bytes where TCP_USER_TIMEOUT exists,
else by the websocket keepalive within two ping intervals (`node_ping_interval`).

Background process events from Bash are queued in a bounded outbox and sent as
`node.exec.event` in order, surviving reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import platform
import re
import shutil
import socket
from collections import deque
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gsv_core import __version__
from gsv_core.client import UNACKED_TIMEOUT_APPLIES
from gsv_core.client import Backoff
from gsv_core.client import ClientIdentity
from gsv_core.client import GatewayClient
from gsv_core.client import local_platform
from gsv_core.defaults import GATEWAY_PING_INTERVAL
from gsv_core.errors import GsvError
from gsv_core.errors import Unauthorized
from gsv_core.node.guard import NodeGuard
from gsv_core.node.logtail import tail_lines
from gsv_core.node.sandbox import Sandbox
from gsv_core.node.sandbox import SandboxPolicy
from gsv_core.node.sandbox import choose_sandbox
from gsv_core.node.sandbox.hidden import hidden_paths
from gsv_core.node.tools import Toolset
from gsv_core.node.tools import build_toolset
from gsv_core.node.tools.workspace import Workspace as ToolWorkspace
from gsv_core.node.transfers import NodeTransfers
from gsv_core.paths import resolve_paths
from gsv_core.protocol import events
from gsv_core.protocol import methods as m
from gsv_core.protocol.frame_text import replace_bad_text
from gsv_core.protocol.frames import EventFrame
from gsv_core.protocol.schemas.nodes import BIN_NAME
from gsv_core.transfer import PartJournal

log = logging.getLogger(__name__)

OUTBOX_MAX = 2048
MAX_LOG_LINES = 5000
REPLY_TIMEOUT = 30.0
REPLACED_NOTE = (
    "characters that cannot be sent (NUL, or bytes that are not UTF-8 in a name) "
    "are shown as U+FFFD"
)


def default_node_id() -> str:
    """`node-{hostname}`, made safe for `{nodeId}__{tool}` names (no dots, no `__`)."""
    host = socket.gethostname().split(".")[0].lower()
    safe = re.sub(r"[^a-z0-9-]+", "-", host).strip("-")
    return f"node-{safe or 'host'}"[:48].rstrip("-")


# A gateway process that dies closes our socket at once (its kernel does), so our ping
# covers only a network that stops carrying packets and a gateway hung while its kernel
# still ACKs. Where TCP_USER_TIMEOUT applies, the first is noticed within about 30 s by the
# heartbeat's unacknowledged bytes (gsv_core/client.py `BeatingConnection`), both ways
# (the ACKs come back to us); the ping is then only a backstop for the hung gateway, which
# serves nobody until it is restarted, and a restart closes the socket anyway. So there it
# is rare: 300 s, one ping round trip per node every five minutes (a thousand nodes cost
# the gateway about 3 pongs a second, not 17), and a hung gateway is given up on within
# about ten minutes (300 s, then as long for the pong: `GatewayClient.connect`).
# Elsewhere the ping is all that notices a dead network, so it stays at a minute.
PING_INTERVAL = 60.0
BACKSTOP_PING_INTERVAL = 300.0


def node_ping_interval(unacked_timeout: bool) -> float:
    """The node's ping interval: the rare backstop where the socket times out
    unacknowledged bytes (`unacked_timeout`, TCP_USER_TIMEOUT), else once a minute."""
    return BACKSTOP_PING_INTERVAL if unacked_timeout else PING_INTERVAL


@dataclass
class NodeSettings:
    url: str
    node_id: str
    workspace: Path
    token: str | None = None  # this node's own credential
    # how to get a credential when there is none: a one-time join code from the owner
    # (`gsv nodes invite`), or the owner token itself on the gateway's own machine
    join_code: str | None = None
    owner_token: str | None = None
    # told the credential a join just minted, to keep it (the secret store)
    on_credential: Callable[[str], None] | None = None
    restrict_to_workspace: bool = False
    # the OS sandbox of commands (docs/sandbox.md): auto | bwrap | seatbelt | off, whether
    # confined commands have the network, what else they may write and must not see
    sandbox: str = "auto"
    sandbox_network: bool = False
    sandbox_writable: tuple[str, ...] = ()
    sandbox_hidden: tuple[str, ...] = ()
    log_file: Path | None = None
    # an unsolicited pong every `heartbeat` seconds tells the gateway we are alive, so it
    # never pings us: it pings only a peer silent for its ping interval (10 s), so this
    # must stay below that, with room for a busy loop (gateway/keepalive.py)
    heartbeat: float = 8.0
    # our own ping notices a gateway that stopped answering: every 300 s where the
    # socket times out unacknowledged bytes (Linux), else every 60 s (`node_ping_interval`)
    ping_interval: float = node_ping_interval(UNACKED_TIMEOUT_APPLIES)
    backoff: Backoff = field(default_factory=Backoff)

    def __post_init__(self) -> None:
        check_heartbeat(self.heartbeat, self.ping_interval)


def check_heartbeat(heartbeat: float, ping_interval: float) -> None:
    """ValueError unless the heartbeat beats the gateway's ping and the ping is sane."""
    if not 0 < heartbeat < GATEWAY_PING_INTERVAL:
        raise ValueError(
            f"node heartbeat must be more than 0 and under the gateway's "
            f"{GATEWAY_PING_INTERVAL:g} s ping interval, not {heartbeat!r}"
        )
    if not 0 < ping_interval < math.inf:
        raise ValueError(
            f"node ping interval must be a positive number of seconds, not {ping_interval!r}"
        )


def node_sandbox(settings: NodeSettings) -> Sandbox:
    """The sandbox `settings` ask for on this machine; SandboxUnavailable when a backend
    named explicitly cannot run here."""
    home = os.path.expanduser("~")
    policy = SandboxPolicy(
        workspace=str(settings.workspace),
        writable=tuple(os.path.expanduser(p) for p in settings.sandbox_writable),
        hidden=hidden_paths(resolve_paths(), home, local_platform(), settings.sandbox_hidden),
        network=settings.sandbox_network,
    )
    return choose_sandbox(settings.sandbox, policy)


def runtime_info(
    toolset: Toolset, workspace: Path | None = None, sandbox: Sandbox | None = None
) -> dict[str, Any]:
    """The runtime info of `connect` (docs/protocol.md#connect): capabilities, OS, env var
    *names* (never values); plus the workspace and pid, which the gateway's approval
    policy uses, and the sandbox its commands run in."""
    info = {
        "workspace": str(workspace) if workspace is not None else None,
        "hostRole": "execution",
        "hostCapabilities": toolset.host_capabilities(),
        "toolCapabilities": toolset.tool_capabilities(),
        "hostOs": local_platform(),
        "hostEnv": sorted(os.environ),
        "pid": os.getpid(),
    }
    if sandbox is not None:
        info["sandbox"] = sandbox.describe()
    return info


class NodeDaemon:
    def __init__(self, settings: NodeSettings, toolset: Toolset | None = None) -> None:
        self.settings = settings
        self._outbox: deque[dict[str, Any]] = deque()
        self._outbox_ready = asyncio.Event()
        self.toolset = toolset or build_toolset(
            settings.workspace,
            restrict_to_workspace=settings.restrict_to_workspace,
            on_exec_event=self.queue_exec_event,
            sandbox=node_sandbox(settings),
        )
        self.sandbox = self.toolset.sandbox  # what its commands really run in
        self._tasks: set[asyncio.Task[None]] = set()
        self._tool_calls: dict[str, asyncio.Task[None]] = {}  # callId -> the call at work
        self.client: GatewayClient | None = None
        self.guard = NodeGuard(settings.node_id, str(settings.workspace))
        paths = ToolWorkspace(settings.workspace, restrict=settings.restrict_to_workspace)
        self.parts = PartJournal(resolve_paths().run_dir / f"parts-{settings.node_id}.json")
        self.transfers = NodeTransfers(paths.resolve, self.parts, self.guard.check)
        self.connected = asyncio.Event()

    # -- lifecycle ----------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Stay connected until `stop` is set; then shut the tools down."""
        log.info(
            "node %s starting (workspace %s, gateway %s, sandbox %s)",
            self.settings.node_id,
            self.settings.workspace,
            self.settings.url,
            _sandbox_words(self.sandbox),
        )
        left = await asyncio.to_thread(self.parts.sweep)
        if left:
            log.info("removed %d partial file(s) of transfers cut off by an earlier stop", left)
        try:
            while not stop.is_set():
                await self._session(stop)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.toolset.close()
            log.info("node %s stopped", self.settings.node_id)

    async def join(self) -> str:
        """Exchange `settings.join_code` for this node's credential (one short connect);
        `on_credential` is told it and it is returned. Raises the gateway's refusal."""
        if not self.settings.join_code:
            raise Unauthorized("no join code: ask the owner for one (`gsv nodes invite`)")
        self.settings.token = None
        client = self._new_client()
        try:
            await client.connect()
        finally:
            await client.close()
        if self.settings.token is None:
            raise Unauthorized("the gateway accepted the join code but sent no credential")
        return self.settings.token

    async def _session(self, stop: asyncio.Event) -> None:
        """One connection: connect, serve until it drops or we stop, then back off."""
        client = self._new_client()
        try:
            if client.token is None and client.identity.join_code is None:
                client.identity.join_code = await self._enroll_code()
            await client.connect()
        except GsvError as exc:
            await client.close()
            delay = self.settings.backoff.next_delay()
            log.warning(
                "cannot connect to %s: %s; retrying in %.1fs", client.url, exc.message, delay
            )
            await _wait(stop, delay)
            return
        self.settings.backoff.reset()
        self.client = client
        self.connected.set()
        log.info("connected to %s as node %s", client.url, self.settings.node_id)
        sender = self._spawn(self._send_outbox(client))
        dropped = asyncio.ensure_future(client.wait_disconnected())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({dropped, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (dropped, stopped):
            waiter.cancel()
        self.connected.clear()
        self.client = None
        sender.cancel()
        await client.close()
        await asyncio.gather(sender, return_exceptions=True)
        await self.transfers.close()  # no more chunks can come: drop partial files
        if not stop.is_set():
            delay = self.settings.backoff.next_delay()
            log.warning("connection to %s lost; reconnecting in %.1fs", client.url, delay)
            await _wait(stop, delay)

    def _new_client(self) -> GatewayClient:
        identity = ClientIdentity(
            mode=m.NODE,
            id=self.settings.node_id,
            version=__version__,
            platform=f"{local_platform()}-{platform.machine().lower()}",
            tools=self.toolset.definitions(),
            node_runtime=runtime_info(self.toolset, self.settings.workspace, self.sandbox),
        )
        if self.settings.token is None:
            identity.join_code = self.settings.join_code
        client = GatewayClient(
            self.settings.url,
            token=self.settings.token,
            identity=identity,
            ping_interval=self.settings.ping_interval,
            heartbeat=self.settings.heartbeat,
            on_binary=self.transfers.on_binary,
            on_connected=self._take_hello,
            on_event=lambda frame: self._on_event(client, frame),
        )
        return client

    async def _take_hello(self, hello: dict[str, Any]) -> None:
        # before any event is handed over: the guard checks bindings from the first call
        key = hello.get("approvalKey")
        self.guard.key = key if isinstance(key, str) and key else None
        credential = hello.get("credential")
        if isinstance(credential, str) and credential:
            self._keep_credential(credential)

    def _keep_credential(self, credential: str) -> None:
        """A join minted our credential: use it from now on (the code is spent)."""
        self.settings.token = credential
        self.settings.join_code = None
        if self.settings.on_credential is not None:
            self.settings.on_credential(credential)
        log.info("node %s joined: its credential is kept for the next connects",
                 self.settings.node_id)  # fmt: skip

    async def _enroll_code(self) -> str:
        """On the owner's machine, with no credential yet: ask the gateway, as the owner,
        for a one-time code for this node id (the same path as a remote join)."""
        if not self.settings.owner_token:
            raise Unauthorized(
                "this node has no credential: on the gateway's machine run "
                "`gsv nodes invite`, then here `gsv node --join CODE`"
            )
        async with GatewayClient(self.settings.url, token=self.settings.owner_token) as owner:
            invite = await owner.call(
                m.AUTH_INVITE, {"role": m.NODE, "subject": self.settings.node_id}
            )
        return str(invite["code"])

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- gateway requests ---------------------------------------------------------------
    def _on_event(self, client: GatewayClient, frame: EventFrame) -> None:
        if frame.event == events.TOOL_INVOKE:
            self._on_tool_invoke(client, frame)  # answered on the spot when it can be
            return
        if frame.event == events.TOOL_CANCEL:
            self._on_tool_cancel(frame)
            return
        handler = self._handlers.get(frame.event)
        if handler is None:
            log.debug("ignoring event %s", frame.event)
            return
        self._spawn(handler(client, frame))

    @functools.cached_property
    def _handlers(self) -> dict[str, Any]:
        return {
            events.LOGS_GET: self._answering("callId", m.LOGS_RESULT, self._logs),
            events.NODE_PROBE: self._answering("probeId", m.NODE_PROBE_RESULT, self._probe),
            events.TRANSFER_SEND: self._on_transfer,
            events.TRANSFER_START: self._on_transfer,
            events.TRANSFER_RECEIVE: self._on_transfer,
            events.TRANSFER_END: self._on_transfer,
        }

    async def _on_transfer(self, client: GatewayClient, frame: EventFrame) -> None:
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        if not isinstance(payload.get("transferId"), int):
            log.warning("malformed %s event: %r", frame.event, frame.payload)
            return

        async def call(method: str, params: dict[str, Any]) -> Any:
            return await client.call(method, params, timeout=REPLY_TIMEOUT)

        if frame.event == events.TRANSFER_SEND:
            await self.transfers.on_send(payload, call)
        elif frame.event == events.TRANSFER_START:
            await self.transfers.on_start(payload, call, client.send_binary)
        elif frame.event == events.TRANSFER_RECEIVE:
            await self.transfers.on_receive(payload, call)
        else:
            await self.transfers.on_end(payload, call)

    def _on_tool_invoke(self, client: GatewayClient, frame: EventFrame) -> None:
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        call_id, tool = payload.get("callId"), payload.get("tool")
        if not isinstance(call_id, str) or not isinstance(tool, str):
            log.warning("malformed tool.invoke event: %r", frame.payload)
            return
        log.debug("tool %s (call %s)", tool, call_id)
        task = self._spawn(self._run_tool_call(client, call_id, tool, payload))
        self._tool_calls[call_id] = task
        task.add_done_callback(lambda _: self._tool_calls.pop(call_id, None))

    def _on_tool_cancel(self, frame: EventFrame) -> None:
        """The gateway gave up on a call: stop it (Bash kills its process group, searches
        stop at their next check) instead of letting it run on for nobody."""
        payload = frame.payload if isinstance(frame.payload, dict) else {}
        task = self._tool_calls.pop(str(payload.get("callId")), None)
        if task is not None:
            log.info("tool call %s cancelled by the gateway", payload.get("callId"))
            task.cancel()

    async def _run_tool_call(
        self, client: GatewayClient, call_id: str, tool: str, payload: dict[str, Any]
    ) -> None:
        args = payload.get("args") or {}
        try:
            access = self.guard.check(tool, args, payload.get("approval"))
            result = _frame_safe_result(await self.toolset.invoke(tool, args, access))
        except GsvError as exc:
            await _answer(client, m.TOOL_RESULT, {"callId": call_id, "error": exc.message})
            return
        problem = await _deliver(client, m.TOOL_RESULT, {"callId": call_id, "result": result})
        if problem is not None:  # the call must not wait for its deadline: say why now
            error = f"the node's {tool} result could not be sent: {problem}"
            await _answer(client, m.TOOL_RESULT, {"callId": call_id, "error": error})

    def _answering(
        self,
        id_key: str,
        method: str,
        answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> Callable[[GatewayClient, EventFrame], Awaitable[None]]:
        """A handler for a gateway request that carries its id in `id_key` and is answered
        with `method`: the id, then what `answer(payload)` says. A request without an id
        has nobody waiting for the answer and is dropped."""

        async def handle(client: GatewayClient, frame: EventFrame) -> None:
            payload = frame.payload if isinstance(frame.payload, dict) else {}
            request_id = payload.get(id_key)
            if isinstance(request_id, str):
                await _answer(client, method, {id_key: request_id, **await answer(payload)})

        return handle

    async def _logs(self, payload: dict[str, Any]) -> dict[str, Any]:
        requested = payload.get("lines")
        count = min(max(1, requested if isinstance(requested, int) else 100), MAX_LOG_LINES)
        path = self.settings.log_file
        try:
            if path is None:
                raise OSError("this node does not log to a file")
            lines, truncated = await asyncio.to_thread(tail_lines, path, count)
        except OSError as exc:
            return {"error": f"cannot read the node log: {exc}"}
        return {"lines": lines, "truncated": truncated}

    async def _probe(self, payload: dict[str, Any]) -> dict[str, Any]:
        bins = payload.get("bins")
        if payload.get("kind") != "bins" or not isinstance(bins, list):
            return {"ok": False, "error": f"unsupported probe kind: {payload.get('kind')!r}"}
        names = [b for b in bins if isinstance(b, str) and BIN_NAME.match(b)]
        return {"ok": True, "bins": {name: shutil.which(name) is not None for name in names}}

    # -- background exec events ---------------------------------------------------------
    def queue_exec_event(self, payload: dict[str, Any]) -> None:
        """Queue a `node.exec.event` (bounded: the oldest is dropped when full)."""
        if len(self._outbox) >= OUTBOX_MAX:
            dropped = self._outbox.popleft()
            log.warning("exec event outbox full; dropped event %s", dropped.get("eventId"))
        self._outbox.append(payload)
        self._outbox_ready.set()

    async def _send_outbox(self, client: GatewayClient) -> None:
        while True:
            if not self._outbox:
                self._outbox_ready.clear()
                await self._outbox_ready.wait()
                continue
            try:
                await client.call(m.NODE_EXEC_EVENT, self._outbox[0], timeout=REPLY_TIMEOUT)
            except GsvError as exc:
                if exc.code == 400:  # the gateway will never take it: drop, do not loop
                    log.warning("exec event refused: %s", exc.message)
                    self._outbox.popleft()
                    continue
                log.info("exec event not sent yet (%s); keeping it", exc.message)
                await asyncio.sleep(1)
                continue
            self._outbox.popleft()


def _sandbox_words(sandbox: Sandbox) -> str:
    described = sandbox.describe()
    if not sandbox.active:
        return f"none: {described.get('reason')}"
    return f"{sandbox.name}, {'with' if described.get('network') else 'no'} network"


async def _answer(client: GatewayClient, method: str, reply: dict[str, Any]) -> None:
    """Send a node's answer (`logs.result`, an error `tool.result`, ...); a refusal or a
    lost connection is only logged: the gateway's call ends on its own deadline."""
    problem = await _deliver(client, method, reply)
    if problem is not None:
        log.warning("%s not delivered: %s", method, problem)


async def _deliver(client: GatewayClient, method: str, reply: dict[str, Any]) -> str | None:
    """Send an answer, its text made frame-safe (`replace_bad_text`); why the gateway
    will never take it (it refused it, or it cannot be encoded), else None. A lost
    connection or a timeout is only logged: the gateway's call ends without us."""
    try:
        await client.call(method, replace_bad_text(reply)[0], timeout=REPLY_TIMEOUT)
    except GsvError as exc:
        if not exc.retryable:
            return exc.message
        log.warning("%s not delivered: %s", method, exc.message)
    except (TypeError, ValueError, RecursionError) as exc:  # not JSON: a tool's bug
        log.error("%s cannot be encoded", method, exc_info=exc)
        return f"it cannot be encoded as JSON ({type(exc).__name__})"
    return None


def _frame_safe_result(result: Any) -> Any:
    """The result with text no frame may carry replaced by U+FFFD, `note` saying so."""
    try:
        result, replaced = replace_bad_text(result)
    except RecursionError:  # too deep for any frame: `_deliver` says so
        return result
    if replaced and isinstance(result, dict):
        note = result.get("note")
        result["note"] = f"{note}; {REPLACED_NOTE}" if isinstance(note, str) else REPLACED_NOTE
    return result


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep `seconds` or until `stop` is set, whichever is first."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()
