"""`gsv security audit [--fix] [--json]`: is this gsv safe, and what fixes it.

Two halves: what this machine knows (the secret store, file modes, secrets left in plain
text in config.toml) and what the gateway knows (`security.audit`: how it listens, its
token, allowed origins, open channels, the approval mode with nodes connected, stale
credentials). One line per finding with the command that fixes it; `--fix` repairs what
can be repaired in place. Exit 0 when clean, 1 with findings.
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

app = plain_app(help="Check (and repair) how safe this gsv is.", no_args_is_help=True)


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    fix: str
    fixable: bool = False


@app.command("audit")
def audit(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what can be repaired.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Check the token, bind address and TLS, origins, file modes, plain-text secrets,
    open channels, the approval mode and stale credentials."""
    state: CliState = ctx.obj
    fixed: list[Finding] = []
    findings = local_findings(fix, fixed)
    remote, note, approvals = _gateway(state, fix, fixed)
    findings += remote
    if state.wants_json(json_output):
        output.print_json(
            {
                "findings": [asdict(f) for f in findings],
                "fixed": [asdict(f) for f in fixed],
                "gateway": note or "checked",
                "approvalMode": approvals,
            }
        )
    else:
        _print(findings, fixed, note, approvals)
    raise typer.Exit(1 if findings else 0)


def _print(
    findings: list[Finding], fixed: list[Finding], note: str | None, approvals: str | None
) -> None:
    if approvals:
        output.write_text(f"approval mode: {approvals}\n")
    for finding in fixed:
        output.write_text(f"fixed  [{finding.check}] {finding.message}\n")
    for finding in findings:
        output.write_text(f"FINDING [{finding.check}] {finding.message}\n  fix: {finding.fix}\n")
    if note:
        output.print_hint(note)
    if not findings:
        output.write_text("security audit: clean\n")


# -- this machine ------------------------------------------------------------------------


def local_findings(fix: bool, fixed: list[Finding]) -> list[Finding]:
    """What this machine knows: the secret store, plain-text secrets, file modes."""
    findings = [*_token_in_store(), *_plain_text_secrets(), *_file_modes()]
    if not fix:
        return findings
    remaining = []
    for finding in findings:
        if finding.fixable and _fix_local(finding):
            fixed.append(finding)
        else:
            remaining.append(finding)
    return remaining


def _token_in_store() -> list[Finding]:
    from gsv_core.localconfig import find_secret

    if find_secret("gateway.token") is not None:
        return []
    return [
        Finding(
            "token",
            "no owner token in the local secret store: the CLI cannot reach the gateway",
            "start the gateway here once (`gsv up` or `gsv gateway start`) to make one, "
            "or on a client machine `gsv local-config set gateway.token TOKEN`",
        )
    ]


def _plain_text_secrets() -> list[Finding]:
    """A secret still held in config.toml (an older gsv put gateway.token there)."""
    from gsv_core.localconfig import KNOWN_KEYS
    from gsv_core.localconfig import find_secret

    return [
        Finding(
            "secrets",
            f"{name} is stored in plain text in config.toml",
            "gsv security audit --fix (moves it to the keyring or the 0600 secrets file)",
            fixable=True,
        )
        for name, spec in KNOWN_KEYS.items()
        if spec.secret and (found := find_secret(name)) is not None and found.source == "config"
    ]


def _file_modes() -> list[Finding]:
    from gsv_core.fsmodes import find_wide_modes
    from gsv_core.fsmodes import gsv_roots

    loose = [wide.path for wide in find_wide_modes(gsv_roots())]
    if not loose:
        return []
    shown = ", ".join(str(p) for p in loose[:3]) + (" ..." if len(loose) > 3 else "")
    return [
        Finding(
            "files",
            f"{len(loose)} path(s) under the gsv home are readable by other users: {shown}",
            "gsv security audit --fix (makes them owner-only: 0700 dirs, 0600 files)",
            fixable=True,
        )
    ]


def _fix_local(finding: Finding) -> bool:
    if finding.check == "secrets":
        from gsv_core.localconfig import KNOWN_KEYS
        from gsv_core.localconfig import find_secret
        from gsv_core.localconfig import set_secret

        for name, spec in KNOWN_KEYS.items():
            found = find_secret(name) if spec.secret else None
            if found is not None and found.source == "config":
                set_secret(name, found.value)  # also removes it from config.toml
        return True
    if finding.check == "files":
        from gsv_core.fsmodes import tighten_gsv_modes

        tighten_gsv_modes()
        return True
    return False


# -- the gateway -------------------------------------------------------------------------


def _gateway(
    state: CliState, fix: bool, fixed: list[Finding]
) -> tuple[list[Finding], str | None, str | None]:
    """The gateway's findings, a note when it cannot be asked, and its approval mode."""
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import SECURITY_AUDIT

    try:
        result: dict[str, Any] = call_quietly(state, SECURITY_AUDIT, {"fix": fix})
    except GsvError as exc:
        return [], f"gateway checks skipped: {exc.message}", None
    if result.get("token"):
        from gsv_core.localconfig import set_secret

        set_secret("gateway.token", result["token"])  # the new owner token, kept, not shown
    fixed += [_finding(f) for f in result["fixed"]]
    mode = f"{result['approvalMode']} ({result['approvalDetail']})"
    return [_finding(f) for f in result["findings"]], None, mode


def _finding(wire: dict[str, Any]) -> Finding:
    return Finding(wire["check"], wire["message"], wire["fix"], bool(wire.get("fixable")))
