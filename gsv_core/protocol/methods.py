"""Every RPC method name (docs/protocol.md#methods), and who may call it.

`METHODS` is the one table of mode restrictions: the router refuses a call from a mode not
listed for it with 403 before any handler runs. The original restricted only a handful of
methods, so nodes and channels could rewrite config or approve pairings.
Here every method follows its direction, least privilege first: what only clients
send (C -> G) is client-only, node replies are node-only, `channel.inbound` is channel-only,
and `tools.list` stays open to every mode because nodes use it as their keepalive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from typing import Literal

Mode = Literal["client", "node", "channel"]
CLIENT: Final = "client"
NODE: Final = "node"
CHANNEL: Final = "channel"
ALL_MODES: Final[frozenset[str]] = frozenset({CLIENT, NODE, CHANNEL})

CONNECT: Final = "connect"

CHAT_SEND: Final = "chat.send"
# gsv addition: follow only some sessions' conversation events (the original sent every
# client every session's)
CHAT_SUBSCRIBE: Final = "chat.subscribe"

CONFIG_GET: Final = "config.get"
CONFIG_SET: Final = "config.set"

TOOLS_LIST: Final = "tools.list"
TOOL_INVOKE: Final = "tool.invoke"
TOOL_RESULT: Final = "tool.result"
TOOL_REQUEST: Final = "tool.request"
# gsv additions: answer a pending tool approval; list pending approvals
TOOL_APPROVE: Final = "tool.approve"
TOOL_APPROVALS: Final = "tool.approvals"

NODE_FORGET: Final = "node.forget"
# gsv additions: join codes and the credentials of nodes and channel adapters
AUTH_INVITE: Final = "auth.invite"
AUTH_LIST: Final = "auth.list"
AUTH_REVOKE: Final = "auth.revoke"
# gsv addition: a one-time sign-in link for the web chat (docs/web.md)
WEB_LINK: Final = "web.link"
# gsv addition: where the owner stands (`gsv status`, `gsv doctor`)
GATEWAY_STATUS: Final = "gateway.status"
# gsv addition: the models a configured provider offers (`gsv models list`)
MODELS_LIST: Final = "models.list"
MODELS_TEST: Final = "models.test"  # one tiny live call (`gsv onboard`, `gsv models test`)
# gsv addition: the usage ledger by source, session, model or day (`gsv usage`)
USAGE_GET: Final = "usage.get"
# gsv addition: search over notes and every past conversation (`gsv memory`, docs/memory.md)
MEMORY_SEARCH: Final = "memory.search"
MEMORY_REINDEX: Final = "memory.reindex"
MEMORY_STATUS: Final = "memory.status"
# gsv addition: MCP servers whose tools the agent is offered (`gsv mcp ...`, docs/mcp.md)
MCP_LIST: Final = "mcp.list"
MCP_ADD: Final = "mcp.add"
MCP_REMOVE: Final = "mcp.remove"
MCP_TEST: Final = "mcp.test"
# gsv addition: the gateway's half of `gsv security audit [--fix]`
SECURITY_AUDIT: Final = "security.audit"
# gsv addition: the node inventory for `gsv nodes list` (online, platform, last seen)
NODES_LIST: Final = "nodes.list"
NODE_PROBE_RESULT: Final = "node.probe.result"
NODE_EXEC_EVENT: Final = "node.exec.event"

LOGS_GET: Final = "logs.get"
LOGS_RESULT: Final = "logs.result"

SESSIONS_LIST: Final = "sessions.list"
SESSION_GET: Final = "session.get"
SESSION_STATS: Final = "session.stats"
SESSION_RESET: Final = "session.reset"
SESSION_PATCH: Final = "session.patch"
SESSION_COMPACT: Final = "session.compact"
SESSION_HISTORY: Final = "session.history"
SESSION_PREVIEW: Final = "session.preview"

CHANNELS_LIST: Final = "channels.list"
CHANNEL_INBOUND: Final = "channel.inbound"
CHANNEL_START: Final = "channel.start"
CHANNEL_STOP: Final = "channel.stop"
CHANNEL_STATUS: Final = "channel.status"
CHANNEL_LOGIN: Final = "channel.login"
CHANNEL_LOGOUT: Final = "channel.logout"

HEARTBEAT_STATUS: Final = "heartbeat.status"
HEARTBEAT_START: Final = "heartbeat.start"
HEARTBEAT_TRIGGER: Final = "heartbeat.trigger"

CRON_STATUS: Final = "cron.status"
CRON_LIST: Final = "cron.list"
CRON_ADD: Final = "cron.add"
CRON_UPDATE: Final = "cron.update"
CRON_REMOVE: Final = "cron.remove"
CRON_RUN: Final = "cron.run"
CRON_RUNS: Final = "cron.runs"

PAIR_LIST: Final = "pair.list"
PAIR_APPROVE: Final = "pair.approve"
PAIR_REJECT: Final = "pair.reject"

SKILLS_STATUS: Final = "skills.status"
SKILLS_UPDATE: Final = "skills.update"

WORKSPACE_LIST: Final = "workspace.list"
WORKSPACE_READ: Final = "workspace.read"
WORKSPACE_WRITE: Final = "workspace.write"
WORKSPACE_DELETE: Final = "workspace.delete"

TRANSFER_META: Final = "transfer.meta"
TRANSFER_ACCEPT: Final = "transfer.accept"
TRANSFER_COMPLETE: Final = "transfer.complete"
TRANSFER_DONE: Final = "transfer.done"
# gsv addition: a client moves a file (gsv transfer), with transfer.progress events
TRANSFER_REQUEST: Final = "transfer.request"


@dataclass(frozen=True)
class MethodSpec:
    """One method of the contract: its name and the connection modes allowed to call it."""

    name: str
    modes: frozenset[str] = ALL_MODES
    needs_connect: bool = True


def _spec(name: str, *modes: str) -> MethodSpec:
    return MethodSpec(name, frozenset(modes) if modes else frozenset({CLIENT}))


METHODS: Final[dict[str, MethodSpec]] = {
    spec.name: spec
    for spec in (
        MethodSpec(CONNECT, needs_connect=False),
        _spec(CHAT_SEND, CLIENT),
        _spec(CHAT_SUBSCRIBE, CLIENT),
        _spec(CONFIG_GET, CLIENT),
        _spec(CONFIG_SET, CLIENT),
        _spec(TOOLS_LIST, CLIENT, NODE, CHANNEL),
        _spec(TOOL_INVOKE, CLIENT),
        _spec(TOOL_RESULT, NODE),
        _spec(TOOL_REQUEST, CLIENT),
        _spec(TOOL_APPROVE, CLIENT),
        _spec(TOOL_APPROVALS, CLIENT),
        _spec(NODE_FORGET, CLIENT),
        _spec(NODES_LIST, CLIENT),
        _spec(NODE_PROBE_RESULT, NODE),
        _spec(NODE_EXEC_EVENT, NODE),
        _spec(LOGS_GET, CLIENT),
        _spec(LOGS_RESULT, NODE),
        _spec(SESSIONS_LIST, CLIENT),
        _spec(SESSION_GET, CLIENT),
        _spec(SESSION_STATS, CLIENT),
        _spec(SESSION_RESET, CLIENT),
        _spec(SESSION_PATCH, CLIENT),
        _spec(SESSION_COMPACT, CLIENT),
        _spec(SESSION_HISTORY, CLIENT),
        _spec(SESSION_PREVIEW, CLIENT),
        _spec(CHANNELS_LIST, CLIENT),
        _spec(CHANNEL_INBOUND, CHANNEL),
        _spec(CHANNEL_START, CLIENT),
        _spec(CHANNEL_STOP, CLIENT),
        _spec(CHANNEL_STATUS, CLIENT),
        _spec(CHANNEL_LOGIN, CLIENT),
        _spec(CHANNEL_LOGOUT, CLIENT),
        _spec(HEARTBEAT_STATUS, CLIENT),
        _spec(HEARTBEAT_START, CLIENT),
        _spec(HEARTBEAT_TRIGGER, CLIENT),
        _spec(CRON_STATUS, CLIENT),
        _spec(CRON_LIST, CLIENT),
        _spec(CRON_ADD, CLIENT),
        _spec(CRON_UPDATE, CLIENT),
        _spec(CRON_REMOVE, CLIENT),
        _spec(CRON_RUN, CLIENT),
        _spec(CRON_RUNS, CLIENT),
        _spec(PAIR_LIST, CLIENT),
        _spec(PAIR_APPROVE, CLIENT),
        _spec(PAIR_REJECT, CLIENT),
        _spec(SKILLS_STATUS, CLIENT),
        _spec(SKILLS_UPDATE, CLIENT),
        _spec(WORKSPACE_LIST, CLIENT),
        _spec(WORKSPACE_READ, CLIENT),
        _spec(WORKSPACE_WRITE, CLIENT),
        _spec(WORKSPACE_DELETE, CLIENT),
        # transfers are driven by the participating nodes only
        _spec(TRANSFER_META, NODE),
        _spec(TRANSFER_ACCEPT, NODE),
        _spec(TRANSFER_COMPLETE, NODE),
        _spec(TRANSFER_DONE, NODE),
        _spec(TRANSFER_REQUEST, CLIENT),
        _spec(AUTH_INVITE, CLIENT),
        _spec(AUTH_LIST, CLIENT),
        _spec(AUTH_REVOKE, CLIENT),
        _spec(WEB_LINK, CLIENT),
        _spec(SECURITY_AUDIT, CLIENT),
        _spec(MODELS_LIST, CLIENT),
        _spec(MODELS_TEST, CLIENT),
        _spec(GATEWAY_STATUS, CLIENT),
        _spec(USAGE_GET, CLIENT),
        _spec(MEMORY_SEARCH, CLIENT),
        _spec(MEMORY_REINDEX, CLIENT),
        _spec(MEMORY_STATUS, CLIENT),
        _spec(MCP_LIST, CLIENT),
        _spec(MCP_ADD, CLIENT),
        _spec(MCP_REMOVE, CLIENT),
        _spec(MCP_TEST, CLIENT),
    )
}
