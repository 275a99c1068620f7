"""`gsv doctor [--fix] [--json]`: checks in order what a working gsv needs and says, for
each broken piece, what is wrong and the exact command that fixes it.

Order: gateway reachable and the token accepted; the model configured with its key; the
provider reachable (its models list) and one tiny live test call; a node online; stale
pid files; the local database's integrity; then this machine's security checks (file
modes, secrets in plain text; shared with `gsv security audit`). Exit 0 when healthy.
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState


@dataclass
class Check:
    name: str
    ok: bool
    message: str
    fix: str = ""
    fixed: bool = False


def doctor(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what can be repaired.")] = False,
    json_output: JsonOpt = False,
) -> None:
    """Find what is broken and say how to fix it (--fix repairs what it can)."""
    state: CliState = ctx.obj
    checks = [*_gateway_checks(state), *_pid_files(fix), _database(), *_security(fix)]
    if state.wants_json(json_output):
        output.print_json({"healthy": all(c.ok for c in checks),
                           "checks": [asdict(c) for c in checks]})  # fmt: skip
    else:
        for check in checks:
            mark = "fixed" if check.fixed else "ok" if check.ok else "FAIL"
            output.write_text(f"{mark:<5} {check.name:<9} {check.message}\n")
            if not check.ok and check.fix:
                output.write_text(f"      fix: {check.fix}\n")
    raise typer.Exit(0 if all(c.ok for c in checks) else 1)


# -- the gateway -------------------------------------------------------------------------


def _gateway_checks(state: CliState) -> list[Check]:
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import Forbidden
    from gsv_core.errors import GatewayUnreachable
    from gsv_core.errors import GsvError
    from gsv_core.errors import Unauthorized
    from gsv_core.protocol.methods import GATEWAY_STATUS

    url = state.url()
    try:
        found: dict[str, Any] = call_quietly(state, GATEWAY_STATUS, timeout=15)
    except GatewayUnreachable as exc:
        return [Check("gateway", False, exc.message, "gsv up (or gsv gateway start)")]
    except (Unauthorized, Forbidden):
        return [
            Check("gateway", True, f"reachable at {url}"),
            Check("token", False, "the gateway refused this CLI's token",
                  "on the gateway's machine the CLI finds it by itself; elsewhere pass "
                  "--token or set GSV_TOKEN to the gateway's owner token"),
        ]  # fmt: skip
    except GsvError as exc:
        return [Check("gateway", False, exc.message, f"check the URL: {url}")]
    checks = [
        Check("gateway", True, f"reachable at {url} (gsv {found['version']})"),
        Check("token", True, "accepted"),
        _model(found["model"]),
        *_keys(found.get("providerKeys") or []),
    ]
    if found["model"]["ready"]:
        checks.append(_provider(state, found["model"]["provider"]))
        if checks[-1].ok:
            checks.append(_test_call(state, found["model"]))
    checks.append(_nodes(found["nodes"]))
    checks += _sandboxes(found["nodes"])
    return checks


def _model(model: dict[str, Any]) -> Check:
    name = f"{model['provider']}/{model['id']}"
    if model["ready"]:
        return Check("model", True, f"{name}, ready")
    return Check("model", False, f"{name} cannot be used", str(model.get("problem")))


def _keys(marks: list[dict[str, Any]]) -> list[Check]:
    """API keys set aside, by fingerprint: a rejected one fails (the owner must act), a
    cooling one only says until when (docs/models.md#key-pools)."""
    from gsv_cli.commands.status import key_lines

    return [
        Check("key", mark["state"] != "rejected", line.removeprefix("keys").strip(),
              f"gsv config set apiKeys.{mark['provider']} NEW_KEY (or gsv models test)")
        for mark, line in zip(marks, key_lines(marks), strict=True)
    ]  # fmt: skip


def _provider(state: CliState, provider: str) -> Check:
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import MODELS_LIST

    try:
        listed = call_quietly(state, MODELS_LIST, {"provider": provider}, timeout=60)
    except GsvError as exc:
        return Check("provider", False, exc.message, f"gsv models list --provider {provider}")
    return Check("provider", True, f"{provider} answers ({listed['count']} models)")


def _test_call(state: CliState, model: dict[str, Any]) -> Check:
    """One tiny live call to the model in use (a few tokens): does it answer?"""
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import MODELS_TEST

    name = f"{model['provider']}/{model['id']}"
    try:
        answer = call_quietly(state, MODELS_TEST, {}, timeout=90)
    except GsvError as exc:
        return Check("test call", False, f"{name}: {exc.message}",
                     f"gsv models list --provider {model['provider']}, then "
                     "gsv config set model.id MODEL")  # fmt: skip
    return Check("test call", True, f"{name} answered in {answer['ms']} ms")


def _nodes(nodes: list[dict[str, Any]]) -> Check:
    online = [n["nodeId"] for n in nodes if n["online"]]
    if online:
        return Check("nodes", True, f"online: {', '.join(online)}")
    return Check("nodes", False, "no node is online: the agent has no hands",
                 "gsv node --foreground (or gsv up)")  # fmt: skip


def _sandboxes(nodes: list[dict[str, Any]]) -> list[Check]:
    """One check per online node: whether its commands run in an OS sandbox."""
    from gsv_core.protocol.sandbox_info import sandbox_words
    from gsv_core.protocol.sandbox_info import unsandboxed_fix
    from gsv_core.protocol.sandbox_info import unsandboxed_problem

    checks = []
    for node in (n for n in nodes if n["online"]):
        sandbox = node.get("sandbox")
        problem = unsandboxed_problem(node["nodeId"], sandbox)
        if problem is None:
            checks.append(Check("sandbox", True, f"{node['nodeId']}: {sandbox_words(sandbox)}"))
        else:
            checks.append(Check("sandbox", False, problem, unsandboxed_fix(sandbox)))
    return checks


# -- this machine ------------------------------------------------------------------------


def _pid_files(fix: bool) -> list[Check]:
    from gsv_core.service import background

    checks = []
    for name in ("gateway", "node"):
        pid = background.read_pid(name)
        if pid is None or background.is_running(pid):
            continue
        check = Check("pid file", False, f"{name} pid file names pid {pid}, which is gone",
                      "gsv doctor --fix (removes it)")  # fmt: skip
        if fix:
            background.running_pid(name)  # removes a stale pid file and its state
            check.ok = check.fixed = True
        checks.append(check)
    return checks or [Check("pid file", True, "none stale")]


def _database() -> Check:
    import sqlite3

    from gsv_core.paths import resolve_paths

    path = resolve_paths().database
    if not path.exists():
        return Check("database", True, "none here (the gateway runs elsewhere)")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        verdict = str(exc)
    if verdict == "ok":
        return Check("database", True, f"{path} passes an integrity check")
    return Check("database", False, f"{path} is damaged: {verdict}",
                 "stop the gateway, keep a copy, then `sqlite3 gsv.db .recover`")  # fmt: skip


def _security(fix: bool) -> list[Check]:
    from gsv_cli.commands.security import Finding
    from gsv_cli.commands.security import local_findings

    fixed: list[Finding] = []
    # the token is judged above, by the gateway itself
    left = [f for f in local_findings(fix, fixed) if f.check != "token"]
    checks = [Check(f.check, True, f.message, f.fix, fixed=True) for f in fixed]
    checks += [Check(f.check, False, f.message, f.fix) for f in left]
    return checks or [Check("security", True, "file modes and local secrets are fine")]
