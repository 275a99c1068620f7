"""The gateway's half of `gsv security audit`: what only the running gateway
knows (how it listens, its token, config, nodes and credentials), as findings, each with
the command that fixes it; `fix_findings` repairs those it safely can.

The CLI adds what only the local machine knows (file modes, the secret store).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import urlsplit

from gsv_core.approval.modes import mode_report
from gsv_core.config.secrets import plaintext_paths
from gsv_core.gateway.listening import Listening
from gsv_core.localconfig import generate_token
from gsv_core.protocol.sandbox_info import unsandboxed_fix
from gsv_core.protocol.sandbox_info import unsandboxed_problem

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

log = logging.getLogger(__name__)

MIN_TOKEN_LENGTH = 24
STALE_AFTER_MS = 30 * 24 * 3600 * 1000  # a credential unused this long is likely forgotten
_LOCAL_ORIGIN_HOSTS = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class Finding:
    check: str  # token|bind|origins|channels|sessions|approvals|sandbox|secrets|credentials
    message: str
    fix: str  # the command (or step) that fixes it
    fixable: bool = False  # `gsv security audit --fix` repairs it
    subject: str | None = None  # what a fix acts on: a channel, a credential id, an origin


async def audit(gateway: Gateway) -> list[Finding]:
    """Every finding, in a stable order (one per problem)."""
    return [
        *_token(gateway),
        *bind_findings(gateway.listening),
        *_origins(gateway),
        *_channels(gateway),
        *_shared_session(gateway),
        *_approvals(gateway),
        *_sandboxes(gateway),
        *await _plaintext(gateway),
        *await _credentials(gateway),
    ]


def _token(gateway: Gateway) -> list[Finding]:
    token = gateway.config.auth_token or ""
    if len(token) >= MIN_TOKEN_LENGTH and len(set(token)) >= 8:
        return []
    return [
        Finding(
            "token",
            f"the owner token is weak ({len(token)} characters)",
            "gsv security audit --fix (makes a strong one; local clients pick it up)",
            fixable=True,
        )
    ]


def bind_findings(listening: Listening | None) -> list[Finding]:
    if listening is None or listening.loopback or listening.tls:
        return []
    return [
        Finding(
            "bind",
            f"listening on {listening.host} with plain ws (no TLS): tokens and messages "
            "cross the network readable",
            "restart with --tls-cert/--tls-key, or bind 127.0.0.1 behind Tailscale or a TLS "
            "reverse proxy (README: Exposing the gateway)",
        )
    ]


def _origins(gateway: Gateway) -> list[Finding]:
    findings = []
    for origin in gateway.config.setting("gateway.allowedOrigins"):
        parts = urlsplit(origin)
        if parts.scheme == "http" and parts.hostname not in _LOCAL_ORIGIN_HOSTS:
            findings.append(
                Finding(
                    "origins",
                    f"allowed origin {origin} is plain http: any network hop can inject a "
                    "page that drives the agent",
                    "gsv security audit --fix (removes it), or allow its https:// origin",
                    fixable=True,
                    subject=origin,
                )
            )
    return findings


def _channels(gateway: Gateway) -> list[Finding]:
    channels: dict[str, Any] = gateway.config.setting("channels")
    return [
        Finding(
            "channels",
            f"channel {name} has dmPolicy: open: any stranger who writes to it drives the agent",
            f"gsv config set channels.{name}.dmPolicy pairing",
            fixable=True,
            subject=name,
        )
        for name, settings in sorted(channels.items())
        if isinstance(settings, dict) and settings.get("dmPolicy") == "open"
    ]


def _shared_session(gateway: Gateway) -> list[Finding]:
    """Other people allowed in while every DM goes to the owner's main session."""
    if gateway.config.setting("session.dmScope") != "main":
        return []
    channels: dict[str, Any] = gateway.config.setting("channels")
    allowed = sorted(
        name
        for name, settings in channels.items()
        if isinstance(settings, dict) and settings.get("allowFrom")
    )
    if not allowed:
        return []
    return [
        Finding(
            "sessions",
            f"session.dmScope is main while {', '.join(allowed)} let other people in: their "
            "DMs share your own main session (history and memory)",
            "gsv config set session.dmScope per-channel-peer",
            fixable=True,
        )
    ]


def _approvals(gateway: Gateway) -> list[Finding]:
    report = mode_report(gateway.config.effective, len(gateway.nodes.online_ids()))
    if not report.flagged:
        return []
    return [
        Finding(
            "approvals",
            f"toolApproval.mode is {report.mode} with nodes connected: {report.detail}",
            "gsv config set toolApproval.mode allowlist",
            fixable=True,
        )
    ]


def _sandboxes(gateway: Gateway) -> list[Finding]:
    """Online nodes whose commands run outside an OS sandbox (docs/sandbox.md)."""
    findings = []
    for info in gateway.nodes.inventory():
        sandbox = info.sandbox.to_wire() if info.sandbox is not None else None
        problem = unsandboxed_problem(info.nodeId, sandbox)
        if info.online and problem is not None:
            findings.append(
                Finding("sandbox", problem, unsandboxed_fix(sandbox), subject=info.nodeId)
            )
    return findings


async def _plaintext(gateway: Gateway) -> list[Finding]:
    """Secrets left in plain text in the database (the gateway moves them at start; one
    written behind its back by an older gsv or by hand shows here)."""
    paths = plaintext_paths(await gateway.config.stored_rows())
    return [
        Finding(
            "secrets",
            f"{path} is stored in plain text in the database",
            "restart the gateway (it moves plain-text secrets to the secret store at start)",
        )
        for path in paths
    ]


async def _credentials(gateway: Gateway) -> list[Finding]:
    now = gateway.now_ms()
    findings = []
    for credential in await gateway.auth.store.list_all():
        last = credential.last_used_at or credential.created_at
        if now - last > STALE_AFTER_MS:
            days = (now - last) // (24 * 3600 * 1000)
            findings.append(
                Finding(
                    "credentials",
                    f"{credential.role} credential {credential.id} ({credential.subject}) "
                    f"unused for {days} days",
                    f"gsv {credential.role}s revoke {credential.id}",
                    fixable=True,
                    subject=credential.id,
                )
            )
    return findings


async def fix_findings(gateway: Gateway, findings: list[Finding]) -> list[Finding]:
    """Repair what can be repaired in place; returns the findings that were fixed."""
    fixed = []
    for finding in findings:
        if finding.fixable and await _fix(gateway, finding):
            log.info("security audit fixed: %s", finding.message)
            fixed.append(finding)
    return fixed


async def _fix(gateway: Gateway, finding: Finding) -> bool:
    config = gateway.config
    if finding.check == "token":
        await config.set("auth.token", generate_token())  # also the store's gateway.token
    elif finding.check == "origins":
        kept = [o for o in config.setting("gateway.allowedOrigins") if o != finding.subject]
        await config.set("gateway.allowedOrigins", kept)
    elif finding.check == "channels":
        await config.set(f"channels.{finding.subject}.dmPolicy", "pairing")
    elif finding.check == "sessions":
        await config.set("session.dmScope", "per-channel-peer")
    elif finding.check == "approvals":
        await config.set("toolApproval.mode", "allowlist")
    elif finding.check == "credentials" and finding.subject:
        await gateway.auth.store.revoke(finding.subject, gateway.now_ms())
    else:
        return False
    return True
