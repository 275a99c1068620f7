"""Join codes and credentials on the command line (`gsv nodes invite|revoke`,
`gsv channels invite|revoke`, the credentials table of `gsv nodes list`)."""

from __future__ import annotations

import time
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.state import CliState

HOW_TO_JOIN = {
    "node": "on the other machine: gsv node --join {code} --url {url}",
    "channel": "give the adapter this code as auth.joinCode in its first connect",
}


def invite(state: CliState, role: str, subject: str | None, replace: bool = False) -> None:
    """Ask the gateway for a one-time code and say how to use it."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import AUTH_INVITE

    params: dict[str, Any] = {"role": role}
    if subject:
        params["subject"] = subject
    if replace:
        params["replace"] = True
    result = call(state, AUTH_INVITE, params)
    if state.json:
        output.print_json(result)
        return
    minutes = max(1, round((result["expiresAt"] - time.time() * 1000) / 60000))
    output.write_text(
        f"join code{_bound(role, subject, replace)}: {result['code']}  "
        f"(single use, expires in {minutes} minutes)\n"
    )
    output.print_hint(HOW_TO_JOIN[role].format(code=result["code"], url=state.url()))
    if replace and not subject:
        output.print_hint(
            f"whichever {role} id joins with it, its earlier credential ends: that {role} "
            "must join again"
        )


def _bound(role: str, subject: str | None, replace: bool) -> str:
    if subject:
        return f" for {role} {subject}"
    return f" for any {role} id, even one that has a credential" if replace else ""


def revoke(state: CliState, ident: str | None, role: str | None = None) -> None:
    """End a credential (or every credential of a node/channel, or with no `ident` every
    credential of `role`) and disconnect it."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import AUTH_REVOKE

    params: dict[str, Any] = {"id": ident} if ident is not None else {"all": True}
    if role is not None:
        params["role"] = role
    result = call(state, AUTH_REVOKE, params)
    if state.json:
        output.print_json(result)
        return
    if not result["revoked"]:
        output.write_text(f"no active {role} credential: nothing to revoke\n")
    for credential in result["revoked"]:
        output.write_text(
            f"revoked {credential['role']} credential {credential['id']} "
            f"({credential['subject']})\n"
        )
    if result["disconnected"]:
        output.write_text(f"disconnected {result['disconnected']} connection(s)\n")


def add_revoke_command(
    app: typer.Typer, ident_help: str, summary: str, role: str | None = None
) -> None:
    """`revoke ID`, alike for nodes, channel adapters and browsers (only credentials of
    `role`, when given)."""

    # a default, not Annotated: annotations are strings here, read later in module scope
    @app.command("revoke", help=summary)
    def revoke_(
        ctx: typer.Context, ident: str = typer.Argument(metavar="ID", help=ident_help)
    ) -> None:
        revoke(ctx.obj, ident, role)


def credentials(state: CliState, role: str) -> list[dict[str, Any]]:
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import AUTH_LIST

    found: list[dict[str, Any]] = call(state, AUTH_LIST, {})["credentials"]
    return [c for c in found if c["role"] == role]


def print_credentials(found: list[dict[str, Any]], role: str, empty: str | None = None) -> None:
    """A table of credentials; browsers' get a column saying when the sign-in ends (or
    that it has: such a browser is refused and must sign in again)."""
    ends = any(c.get("expiresAt") for c in found)
    rows = [
        [
            c["subject"],
            c["id"],
            output.when(c.get("createdAt")),
            output.when(c.get("lastUsedAt")) if c.get("lastUsedAt") else "never",
            "yes" if c.get("connected") else "no",
            *([_ends(c.get("expiresAt"))] if ends else []),
        ]
        for c in found
    ]
    output.print_table(
        [
            role,
            "credential",
            "issued",
            "last used",
            "connected",
            *(["until"] if ends else []),
        ],
        rows,
        empty=empty or f"no {role} credentials: `gsv {role}s invite` makes a join code",
        whole=("credential",),
    )


def _ends(expires_at: Any) -> str:
    if not isinstance(expires_at, int):
        return "-"
    # the day is enough (and keeps the table within 80 columns)
    return "expired" if expires_at <= time.time() * 1000 else output.when(expires_at)[:10]


def show_credentials(
    state: CliState, role: str, json_flag: bool, label: str | None = None, empty: str | None = None
) -> None:
    """The credentials of one role: `{"credentials": [...], "count": n}` or a table."""
    found = credentials(state, role)
    if state.wants_json(json_flag):
        output.print_listing("credentials", found)
        return
    print_credentials(found, label or role, empty)
