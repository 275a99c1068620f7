"""The last, optional steps of `gsv onboard`: connect a messenger, and install the gateway
and node as user services so they start at login.

A messenger is connected by starting its default account with the token(s) it needs
(`channel.start` with them as the account's config: the gateway keeps them in its secret
store); WhatsApp logs in with a QR code instead. Tokens come from an environment variable
(`--messenger-token-env`, for scripts) or a hidden prompt, never a command-line value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import typer

from gsv_cli import output
from gsv_cli.state import CliState


@dataclass(frozen=True)
class Messenger:
    name: str
    tokens: tuple[tuple[str, str], ...]  # (config key, what to ask for)
    where: str  # where the user gets the token


MESSENGERS = {
    "telegram": Messenger("telegram", (("botToken", "bot token"),), "@BotFather in Telegram"),
    "discord": Messenger(
        "discord", (("botToken", "bot token"),), "discord.com/developers/applications"
    ),
    "slack": Messenger(
        "slack",
        (("botToken", "bot token (xoxb-)"), ("appToken", "app-level token (xapp-)")),
        "api.slack.com/apps (Socket Mode on)",
    ),
    "whatsapp": Messenger("whatsapp", (), "a QR code scanned with your phone"),
}
CHOICES = ("none", *MESSENGERS)


def ask_messenger() -> str | None:
    for number, choice in enumerate(CHOICES, 1):
        output.write_text(f"  {number}. {choice}\n")
    while True:
        picked: int = typer.prompt("Connect a messenger (number)", default=1, type=int)
        if 1 <= picked <= len(CHOICES):
            return None if picked == 1 else CHOICES[picked - 1]
        output.print_error(f"choose 1 to {len(CHOICES)}")


def connect_messenger(state: CliState, name: str, token_envs: list[str], asking: bool) -> None:
    """Start `name`'s default account (WhatsApp: log it in); GsvError says what failed."""
    from gsv_cli.commands.channels import print_login
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import CHANNEL_LOGIN
    from gsv_core.protocol.methods import CHANNEL_START

    messenger = MESSENGERS.get(name)
    if messenger is None:
        output.fail(f"unknown messenger {name!r}", f"Choose one of {', '.join(MESSENGERS)}.")
    if not messenger.tokens:
        print_login(call(state, CHANNEL_LOGIN, {"channel": name, "accountId": "default"}))
        return
    config = {key: _token(messenger, what, index, token_envs, asking)
              for index, (key, what) in enumerate(messenger.tokens)}  # fmt: skip
    call(state, CHANNEL_START, {"channel": name, "accountId": "default", "config": config})
    output.write_text(f"{name} connected (its token is in the gateway's secret store)\n")


def _token(messenger: Messenger, what: str, index: int, envs: list[str], asking: bool) -> str:
    if index < len(envs):
        value = os.environ.get(envs[index], "").strip()
        if not value:
            output.fail(f"the environment variable {envs[index]} is empty or not set")
        return value
    if not asking:
        flags = " ".join(f"--messenger-token-env VAR{i + 1}" for i in range(len(messenger.tokens)))
        output.fail(f"{messenger.name} needs its {what}", f"Pass {flags} (from {messenger.where}).")
    typed: str = typer.prompt(f"{messenger.name} {what} (hidden; from {messenger.where})",
                              hide_input=True)  # fmt: skip
    if not typed.strip():
        output.fail(f"no {what} given")
    return typed.strip()


def install_services(ctx: typer.Context) -> None:
    """The gateway and a node for the current directory, as user services."""
    from gsv_cli.commands import gateway
    from gsv_cli.commands import node

    gateway.install(ctx, host=None, port=None, tls_cert=None, tls_key=None,
                    insecure_no_tls=False)  # fmt: skip
    node.install(ctx.obj, node.resolve_settings(None, None, None))
