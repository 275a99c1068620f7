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
    module: str
    attribute: str = "app"
    short_help: str | None = None
    hidden: bool = False

    @property
    def group(self) -> bool:
        """Whether it is a group: a group's attribute is `app` or ends in `_app` (a test
        holds every entry to this)."""
        return self.attribute == "app" or self.attribute.endswith("_app")


# in `gsv --help` order; a hidden alias accepts the other spelling
ENTRIES = (
    Entry("chat", "chat", "chat", "Send MESSAGE to the agent and stream the..."),
    Entry("up", "up", "up", "Make sure a local gateway and a node for..."),
    Entry("down", "up", "down", "Stop the gateway and node that `gsv up`..."),
    Entry("status", "status", "status", "Show the gateway, model, nodes, channels,..."),
    Entry("doctor", "doctor", "doctor", "Find what is broken and say how to fix it..."),
    Entry("onboard", "onboard", "onboard", "Set up a model: provider, key, model, a..."),
    Entry("usage", "usage", "usage", "Show tokens and cost of the agent's model..."),
    Entry("web", "web", short_help="The web chat: open it signed in; list or..."),
    Entry("gateway", "gateway", short_help="Run the gateway: foreground, background or..."),
    Entry("node", "node", short_help="Run this machine as a node: its tools..."),
    Entry("nodes", "nodes", short_help="Nodes the gateway knows, online or not."),
    Entry("tools", "tools", short_help="List the agent's tools, or call one by hand."),
    Entry("mcp", "mcp", short_help="MCP servers whose tools the agent can use."),
    Entry("sessions", "sessions", short_help="List and manage the agent's sessions."),
    Entry("session", "sessions", hidden=True),
    Entry("workspace", "workspace", short_help="Read and change the agent's workspace files."),
    Entry("skills", "skills", short_help="Skills: which ones the agent can use on..."),
    Entry("cron", "cron", short_help="Scheduled jobs: add, list, run and remove..."),
    Entry("heartbeat", "heartbeat", short_help="Heartbeats: periodic check-ins where the..."),
    Entry("channels", "channels", short_help="Messenger channels: start, stop, status,..."),
    Entry("channel", "channels", hidden=True),
    Entry("pairing", "channels", "pairing_app", "Senders waiting for your approval."),
    Entry("pair", "channels", "pairing_app", hidden=True),
    Entry("approvals", "approvals", short_help="Tool calls waiting for your approval; the..."),
    Entry("security", "security", short_help="Check (and repair) how safe this gsv is."),
    Entry("models", "models", short_help="The models your providers offer."),
    Entry("transfer", "transfer", "transfer", "Copy a file; the command ends when the..."),
    Entry("logs", "nodes", "logs", "Show the last lines of a node's log,..."),
    Entry("config", "config", short_help="Read and change the gateway configuration."),
    Entry(
        "local-config", "local_config", short_help="This machine's local config (config.toml)..."
    ),
    Entry("completions", "completions", short_help="Shell completions for bash, zsh and fish."),
    Entry("init", "init", "init", "Write the local config (config.toml) and..."),
)
