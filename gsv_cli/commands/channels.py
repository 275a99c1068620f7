"""`gsv channels ...` (alias `gsv channel`) and `gsv pairing ...` (alias `gsv pair`):
messenger accounts and the senders waiting to be let in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from typing import Any

import typer

from gsv_cli import credentials
from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.reads import show

app = plain_app(help="Messenger channels: start, stop, status, login.", no_args_is_help=True)
pairing_app = plain_app(help="Senders waiting for your approval.", no_args_is_help=True)

Channel = Annotated[str, typer.Argument(help="Channel name, e.g. telegram.")]
Account = Annotated[str, typer.Argument(help="Account id.")]
Sender = Annotated[str, typer.Argument(help="Sender id.")]


def _call(ctx: typer.Context, method: str, params: dict[str, Any] | None = None) -> Any:
    from gsv_cli.runner import call

    return call(ctx.obj, method, params)


@app.command("list")
def list_channels(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Channel accounts the gateway knows (in-process and external)."""
    from gsv_core.protocol.methods import CHANNELS_LIST

    result = _call(ctx, CHANNELS_LIST)
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
        return
    rows = [
        [c["channel"], c["accountId"], "connected" if c.get("connected") else "stopped",
         c.get("mode", ""), output.when(c.get("lastMessageAt"))]
        for c in result["channels"]
    ]  # fmt: skip
    empty = "no channels: start one with `gsv channels start telegram`"
    output.print_table(["channel", "account", "state", "mode", "last message"], rows, empty=empty)


def _account(channel: str, account: str, **extra: Any) -> dict[str, Any]:
    return {"channel": channel, "accountId": account, **extra}


@app.command("start")
def start(
    ctx: typer.Context, channel: Channel, account: Account = "default", json_output: JsonOpt = False
) -> None:
    """Start a channel account (it starts again by itself after a gateway restart)."""
    from gsv_core.protocol.methods import CHANNEL_START

    show(ctx.obj, CHANNEL_START, _account(channel, account), json_output, said("started"))


@app.command("stop")
def stop(
    ctx: typer.Context, channel: Channel, account: Account = "default", json_output: JsonOpt = False
) -> None:
    """Stop a channel account."""
    from gsv_core.protocol.methods import CHANNEL_STOP

    show(ctx.obj, CHANNEL_STOP, _account(channel, account), json_output, said("stopped"))


@app.command("status")
def status(
    ctx: typer.Context,
    channel: Channel,
    account: Annotated[str | None, typer.Argument(help="Account id (default: all).")] = None,
    json_output: JsonOpt = False,
) -> None:
    """Connection state of a channel's accounts."""
    from gsv_core.protocol.methods import CHANNEL_STATUS

    params: dict[str, Any] = {"channel": channel}
    if account:
        params["accountId"] = account
    result = _call(ctx, CHANNEL_STATUS, params)
    if ctx.obj.wants_json(json_output):
        output.print_json(result)
        return
    rows = [
        [a["accountId"], "yes" if a["connected"] else "no", "yes" if a["authenticated"] else "no",
         output.when(a.get("lastActivity")), _queued(a.get("queuedReplies")), a.get("error", "")]
        for a in result["accounts"]
    ]  # fmt: skip
    columns = ["account", "connected", "authenticated", "last activity", "queued replies", "error"]
    output.print_table(columns, rows, empty=f"no {channel} account is running")


def _queued(queued: dict[str, Any] | None) -> str:
    """Replies waiting for delivery: how many, since when, the next try and why."""
    if not queued:
        return "-"
    text = f"{queued['count']} since {output.when(queued['oldestAt'])}, next try "
    text += output.when(queued["nextAttemptAt"])
    return f"{text} ({queued['lastError']})" if queued.get("lastError") else text


@app.command("login")
def login(
    ctx: typer.Context,
    channel: Channel,
    account: Account = "default",
    force: Annotated[bool, typer.Option("--force", help="Log in again even if logged in.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Log a channel account in (shows a QR code image when the channel uses one)."""
    from gsv_core.protocol.methods import CHANNEL_LOGIN

    params = _account(channel, account, force=force)
    show(ctx.obj, CHANNEL_LOGIN, params, json_output, print_login)


def print_login(result: dict[str, Any]) -> None:
    output.write_text(str(result.get("message", "")).rstrip() + "\n")
    if result.get("qrDataUrl"):
        _show_qr(str(result["qrDataUrl"]), result["channel"], result["accountId"])


def _show_qr(data_url: str, channel: str, account: str) -> None:
    """Draw the QR code in the terminal when it can be read, and save the image too."""
    from pathlib import Path

    from gsv_cli.qr import QrError
    from gsv_cli.qr import terminal_qr

    path = _save_qr(data_url, channel, account)
    try:
        drawn = terminal_qr(Path(path).read_bytes())
    except QrError as exc:
        output.write_text(f"scan the QR code in {path} ({exc}: cannot draw it here)\n")
        return
    output.write_text(drawn + f"\nscan the QR code above (also saved to {path})\n")


def _save_qr(data_url: str, channel: str, account: str) -> str:
    """Write a `data:image/...;base64,` QR code to a file next to the logs."""
    import base64

    from gsv_core.fsmodes import write_private_file
    from gsv_core.paths import resolve_paths

    header, _, payload = data_url.partition(",")
    extension = header.split("/")[-1].split(";")[0] or "png"
    path = resolve_paths().run_dir / f"{channel}-{account}-login.{extension}"
    # a login QR code is a credential while it lasts: owner-only like the rest of run/
    write_private_file(path, base64.b64decode(payload) if ";base64" in header else payload.encode())
    return str(path)


@app.command("logout")
def logout(
    ctx: typer.Context, channel: Channel, account: Account = "default", json_output: JsonOpt = False
) -> None:
    """Log a channel account out and forget it."""
    from gsv_core.protocol.methods import CHANNEL_LOGOUT

    params = _account(channel, account)
    show(ctx.obj, CHANNEL_LOGOUT, params, json_output, said("logged out of"))


def said(verb: str) -> Callable[[dict[str, Any]], None]:
    """A renderer of one line: what was done to which account (`started telegram (bot)`)."""
    return lambda result: output.write_text(f"{verb} {result['channel']} ({result['accountId']})\n")


@pairing_app.command("list")
def pairing_list(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Senders waiting for approval, with their first message."""
    from gsv_core.protocol.methods import PAIR_LIST

    result = _call(ctx, PAIR_LIST)
    if ctx.obj.wants_json(json_output):
        output.print_listing("pairs", list(result["pairs"].values()))
        return
    rows = [
        [p["channel"], p["senderId"], p.get("senderName", ""), output.when(p.get("requestedAt")),
         p.get("firstMessage", "")]
        for p in result["pairs"].values()
    ]  # fmt: skip
    output.print_table(["channel", "sender", "name", "asked", "first message"], rows,
                       empty="nobody is waiting")  # fmt: skip


@pairing_app.command("approve")
def pairing_approve(
    ctx: typer.Context,
    channel: Channel,
    sender: Sender,
    owner: Annotated[
        bool,
        typer.Option(
            "--owner", help="They are you (or act for you): the owner's reach, not a guest's."
        ),
    ] = False,
    json_output: JsonOpt = False,
) -> None:
    """Let a sender talk to the agent as a guest, or as an owner with --owner (they get a
    welcome message)."""
    from gsv_core.protocol.methods import PAIR_APPROVE

    params = {"channel": channel, "senderId": sender, "owner": owner}
    result = _answer_pair(ctx, PAIR_APPROVE, "approved", params, json_output)
    if ctx.obj.wants_json(json_output):
        return
    if result.get("reach"):
        output.write_text(f"  as {result['reach']}\n")
    if not owner:
        output.print_hint(f"if this is you: gsv pairing approve {channel} {sender} --owner")
    if result.get("warning"):
        _offer_own_sessions(ctx, str(result["warning"]))


def _answer_pair(
    ctx: typer.Context, method: str, verb: str, params: dict[str, Any], json_output: bool
) -> Any:
    """pair.approve or pair.reject for {channel, senderId, ...}, said as `approved 42 on
    telegram`."""

    def said(result: dict[str, Any]) -> None:
        output.write_text(f"{verb} {result['senderId']} on {params['channel']}\n")

    return show(ctx.obj, method, params, json_output, said)


def _offer_own_sessions(ctx: typer.Context, warning: str) -> None:
    """dmScope main: say what that means; on a terminal offer the one-command fix."""
    import sys

    from gsv_core.protocol.methods import CONFIG_SET

    output.print_hint(f"warning: {warning}")
    if sys.stdin.isatty() and typer.confirm("Give each person their own session now?", True):
        _call(ctx, CONFIG_SET, {"path": "session.dmScope", "value": "per-channel-peer"})
        output.write_text("session.dmScope is now per-channel-peer\n")


@pairing_app.command("reject")
def pairing_reject(
    ctx: typer.Context, channel: Channel, sender: Sender, json_output: JsonOpt = False
) -> None:
    """Refuse a sender's request."""
    from gsv_core.protocol.methods import PAIR_REJECT

    _answer_pair(ctx, PAIR_REJECT, "rejected", {"channel": channel, "senderId": sender},
                 json_output)  # fmt: skip


@app.command("invite")
def invite(ctx: typer.Context, channel: Channel) -> None:
    """A one-time join code for an external adapter of CHANNEL (`mode: channel`)."""
    credentials.invite(ctx.obj, "channel", channel)


@app.command("credentials")
def list_credentials(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """The credentials of external channel adapters."""
    credentials.show_credentials(ctx.obj, "channel", json_output)


credentials.add_revoke_command(
    app,
    "Channel or credential id.",
    "End an external adapter's credential and disconnect it at once.",
    role="channel",
)
