"""The table of `gsv`'s commands and groups: each name, where it lives and the help shown
beside it when the first word is completed.

gsv_cli.main builds the app from it (only the group a run names); gsv_cli.first_word
answers `gsv cr<TAB>` from it without building anything. It imports nothing of the CLI,
so both can read it.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    """A command or group: its name, where it lives (a module of gsv_cli.commands and the
    attribute there: a Typer app for a group, a function for a command) and the help click
    shows beside the name in a completion (None: not recorded, or hidden).

    `short_help` is click's get_short_help_str of the command: the first sentence of its
    help, cut to 45 characters. tests/cli/test_first_word_completion.py holds it equal to
    the app's; completion of a name without it is left to the app.
    """

    name: str
    short_help: str | None
    module: str
    attribute: str = "app"
    hidden: bool = False

    @property
    def group(self) -> bool:
        """Whether it is a group: a group's attribute is `app` or ends in `_app` (a test
        holds every entry to this)."""
        return self.attribute == "app" or self.attribute.endswith("_app")


# in `gsv --help` order; a hidden alias accepts the other spelling
ENTRIES = (
    Entry("chat", "Send MESSAGE to the agent and stream the...", "chat", "chat"),
    Entry("up", "Make sure a local gateway and a node for...", "up", "up"),
    Entry("down", "Stop the gateway and node that `gsv up`...", "up", "down"),
    Entry("status", "Show the gateway, model, nodes, channels,...", "status", "status"),
    Entry("doctor", "Find what is broken and say how to fix it...", "doctor", "doctor"),
    Entry("onboard", "Set up a model: provider, key, model, a...", "onboard", "onboard"),
    Entry("usage", "Show tokens and cost of the agent's model...", "usage", "usage"),
    Entry("web", "The web chat: open it signed in; list or...", "web"),
    Entry("gateway", "Run the gateway: foreground, background or...", "gateway"),
    Entry("node", "Run this machine as a node: its tools...", "node"),
    Entry("nodes", "Nodes the gateway knows, online or not.", "nodes"),
    Entry("tools", "List the agent's tools, or call one by hand.", "tools"),
    Entry("mcp", "MCP servers whose tools the agent can use.", "mcp"),
    Entry("sessions", "List and manage the agent's sessions.", "sessions"),
    Entry("session", None, "sessions", hidden=True),
    Entry("workspace", "Read and change the agent's workspace files.", "workspace"),
    Entry("memory", "Search notes and every past conversation.", "memory"),
    Entry("skills", "Skills: which ones the agent can use on...", "skills"),
    Entry("cron", "Scheduled jobs: add, list, run and remove...", "cron"),
    Entry("heartbeat", "Heartbeats: periodic check-ins where the...", "heartbeat"),
    Entry("channels", "Messenger channels: start, stop, status,...", "channels"),
    Entry("channel", None, "channels", hidden=True),
    Entry("pairing", "Senders waiting for your approval.", "channels", "pairing_app"),
    Entry("pair", None, "channels", "pairing_app", hidden=True),
    Entry("approvals", "Tool calls waiting for your approval; the...", "approvals"),
    Entry("security", "Check (and repair) how safe this gsv is.", "security"),
    Entry("models", "The models your providers offer.", "models"),
    Entry("transfer", "Copy a file; the command ends when the...", "transfer", "transfer"),
    Entry("logs", "Show the last lines of a node's log,...", "nodes", "logs"),
    Entry("config", "Read and change the gateway configuration.", "config"),
    Entry("local-config", "This machine's local config (config.toml)...", "local_config"),
    Entry("completions", "Shell completions for bash, zsh and fish.", "completions"),
    Entry("init", "Write the local config (config.toml) and...", "init", "init"),
)
