"""Approval bindings: a decision tied to one exact call. The gateway signs the hash of
(tool, exact arguments) with a per-node key; the node recomputes the hash of the call
it is about to run and checks the signature, so an approval for one command can never
cover a different one, even if something between the two changed the arguments.

A binding also says which access the call was granted (signed with the rest):
`sandbox`, the node's OS sandbox, for whatever ran unasked (the read-only table, the
sandbox's own latitude, `toolApproval.mode off`); `full`, as the node's user, for what
the owner approved (once, for the session, by a rule, or by calling the tool by hand)
(docs/sandbox.md)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

SANDBOX, FULL = "sandbox", "full"
ACCESS = (SANDBOX, FULL)


def new_key() -> str:
    return secrets.token_hex(32)


def call_hash(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of a call: the bare tool name and its arguments as canonical JSON
    (`workdir`, when given, is part of the arguments, so the directory is bound too)."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(canonical.encode()).hexdigest()


def sign(
    key: str, tool: str, args: dict[str, Any], decision: str, access: str = SANDBOX
) -> dict[str, str]:
    digest = call_hash(tool, args)
    signed = f"{decision}:{access}:{digest}".encode()
    signature = hmac.new(key.encode(), signed, hashlib.sha256).hexdigest()
    return {"decision": decision, "access": access, "hash": digest, "sig": signature}


def verify(key: str, tool: str, args: dict[str, Any], binding: Any) -> str | None:
    """The access `binding` grants exactly this call under `key` (SANDBOX or FULL), or
    None when it allows nothing."""
    if not isinstance(binding, dict) or binding.get("decision") != "allow":
        return None
    access = binding.get("access")
    if access not in ACCESS:
        return None
    expected = sign(key, tool, args, "allow", str(access))
    hash_ok = hmac.compare_digest(str(binding.get("hash", "")), expected["hash"])
    sig_ok = hmac.compare_digest(str(binding.get("sig", "")), expected["sig"])
    return str(access) if hash_ok and sig_ok else None
