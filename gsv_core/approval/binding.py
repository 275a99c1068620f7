"""Approval bindings: a decision tied to one exact call. The gateway signs the hash of
(tool, exact arguments) with a per-node key; the node recomputes the hash of the call
it is about to run and checks the signature, so an approval for one command can never
cover a different one, even if something between the two changed the arguments."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any


def new_key() -> str:
    return secrets.token_hex(32)


def call_hash(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of a call: the bare tool name and its arguments as canonical JSON
    (`workdir`, when given, is part of the arguments, so the directory is bound too)."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(canonical.encode()).hexdigest()


def sign(key: str, tool: str, args: dict[str, Any], decision: str) -> dict[str, str]:
    digest = call_hash(tool, args)
    signature = hmac.new(key.encode(), f"{decision}:{digest}".encode(), hashlib.sha256).hexdigest()
    return {"decision": decision, "hash": digest, "sig": signature}


def verify(key: str, tool: str, args: dict[str, Any], binding: Any) -> bool:
    """Whether `binding` allows exactly this call under `key`."""
    if not isinstance(binding, dict) or binding.get("decision") != "allow":
        return False
    expected = sign(key, tool, args, "allow")
    return hmac.compare_digest(
        str(binding.get("hash", "")), expected["hash"]
    ) and hmac.compare_digest(str(binding.get("sig", "")), expected["sig"])
