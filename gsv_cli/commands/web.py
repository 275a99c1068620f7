"""`gsv web`: the web chat (docs/web.md), opened in the default browser already signed in.

    gsv web             open it (a one-time link: good once, for two minutes)
    gsv web --print     print the link instead (another browser, a script)
    gsv web --qr        draw the link as a QR code, for a phone
    gsv web list        browsers signed in
    gsv web revoke ID   sign one out (its open tabs close at once)
    gsv web revoke --all  sign every browser out

The link is built from the address this CLI reaches the gateway at (`--url`), so for a
phone give `--url` an address the phone can reach too.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

import typer

from gsv_cli import credentials
from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState
from gsv_cli.state import http_base

app = plain_app(help="The web chat: open it signed in; list or sign out browsers.")

PrintOpt = Annotated[bool, typer.Option("--print", help="Print the link; open nothing.")]
QrOpt = Annotated[bool, typer.Option("--qr", help="Draw the link as a QR code (a phone).")]
LOOPBACK_QR = (
    "this link points at {host}, which only this machine reaches: to open the chat on a "
    "phone, run the gateway on an address the phone reaches (with TLS, see `gsv gateway "
    "--help`) and pass that address with --url"
)


@app.callback(invoke_without_command=True)
def web(
    ctx: typer.Context, link_only: PrintOpt = False, qr: QrOpt = False, json_output: JsonOpt = False
) -> None:
    """Open the web chat in your browser, signed in."""
    if ctx.invoked_subcommand is None:  # not `gsv web list` or `gsv web revoke`
        open_chat(ctx.obj, link_only, qr, ctx.obj.wants_json(json_output))


def open_chat(state: CliState, link_only: bool, qr: bool, as_json: bool) -> None:
    link, expires_at = sign_in_link(state)
    if as_json:
        output.print_json({"url": link, "expiresAt": expires_at})
    elif qr:
        show_qr(link)
    elif link_only or not _open(link):
        output.write_text(link + "\n")
        output.print_hint("open it within two minutes; it signs one browser in, once")
    else:
        output.write_text("opened the web chat in your browser\n")


def sign_in_link(state: CliState) -> tuple[str, int]:
    """A fresh one-time link on the gateway's HTTP address, and when it expires."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import WEB_LINK

    result = call(state, WEB_LINK, {})
    return http_base(state.url()) + result["path"], int(result["expiresAt"])


def show_qr(link: str) -> None:
    import segno

    from gsv_cli.qr import render
    from gsv_core.loopback import is_loopback

    host = urlsplit(link).hostname or ""
    if is_loopback(host):
        output.print_hint(LOOPBACK_QR.format(host=host))
    matrix = [[bool(module) for module in row] for row in segno.make(link, error="m").matrix]
    output.write_text(render(matrix) + "\n")
    output.print_hint("scan it within two minutes; it signs one browser in, once")


def _open(link: str) -> bool:
    """True when a browser took the link (`$BROWSER` names one, as for every program)."""
    import webbrowser

    try:
        return webbrowser.open(link)
    except webbrowser.Error:
        return False


@app.command("list")
def list_browsers(ctx: typer.Context, json_output: JsonOpt = False) -> None:
    """Browsers signed in to the web chat."""
    empty = "no browser is signed in: `gsv web`"
    credentials.show_credentials(ctx.obj, "web", json_output, "browser", empty)


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    ident: Annotated[
        str | None, typer.Argument(metavar="[ID]", help="A browser's credential id (gsv web list).")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Sign every browser out.")] = False,
) -> None:
    """Sign a browser out (or --all of them); their tabs close at once."""
    if ident is not None and every:
        raise typer.BadParameter("give a browser's ID or --all, not both", param_hint="ID")
    if ident is None and not every:
        raise typer.BadParameter(
            "name the browser to sign out (its ID in `gsv web list`), or give --all",
            param_hint="ID",
        )
    credentials.revoke(ctx.obj, ident, "web")
