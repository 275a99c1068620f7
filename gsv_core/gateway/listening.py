"""How the gateway listens (set by `serve`, read by the security audit)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listening:
    host: str
    loopback: bool
    tls: bool
