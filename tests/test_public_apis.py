"""gsv_core stays on the libraries' public surface (so a library update cannot break it unseen): no private stdlib names
(json's scanner and C encoder, code objects), and from websockets only its documented
public modules and names, so a websockets upgrade is a version bump."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "gsv_core").rglob("*.py"))

# attribute names that reach into an implementation (json's C scanner and encoder, code
# and generator frames)
PRIVATE_ATTRIBUTES = {"scan_once", "c_make_encoder", "__code__", "gi_code", "gi_yieldfrom"}
# websockets' documented modules and, where only part of a module is documented, the names
WEBSOCKETS_PUBLIC: dict[str, set[str] | None] = {
    "websockets.asyncio.server": None,
    "websockets.asyncio.client": None,
    "websockets.exceptions": None,
    "websockets.typing": None,
    "websockets.http11": {"Request", "Response"},
    "websockets.datastructures": {"Headers"},
    "websockets.frames": {"Close", "CloseCode"},
}


def _problems(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in PRIVATE_ATTRIBUTES:
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {alias.name}"
                for alias in node.names
                if _websockets_refused(alias.name, None)
            ]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [
                f"line {node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name in PRIVATE_ATTRIBUTES or _websockets_refused(node.module, alias.name)
            ]
    return found


def _websockets_refused(module: str, name: str | None) -> bool:
    if module != "websockets" and not module.startswith("websockets."):
        return False
    if module not in WEBSOCKETS_PUBLIC:
        return True
    allowed = WEBSOCKETS_PUBLIC[module]
    return allowed is not None and name not in allowed


def test_gsv_core_uses_only_public_names_of_json_and_websockets() -> None:
    """No module reaches into json's or websockets' internals."""
    found = {
        str(path.relative_to(ROOT)): problems
        for path in SOURCES
        if (problems := _problems(ast.parse(path.read_text(), str(path))))
    }
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "import json\nscan = json.JSONDecoder().scan_once",
        "from json.encoder import c_make_encoder",
        "f = g.__code__",
        "from websockets.streams import StreamReader",
        "from websockets.frames import Frame",
        "import websockets.protocol",
        "from websockets.asyncio.connection import Connection",
    ],
)
def test_the_check_refuses_each_kind_of_private_use(source: str) -> None:
    """The guard itself: each kind of reach into internals is caught."""
    assert _problems(ast.parse(source))
