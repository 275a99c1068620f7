"""Tool parameter schemas as the model gets them: the same contract in fewer tokens.

Pydantic writes an optional field as `{"anyOf": [X, {"type": "null"}], "default": null}`;
to the model an optional field is simply one not listed in `required`, so it gets X.
The gateway still validates calls against the full schema (null stays accepted). Every
object schema carries `required`, empty when nothing is required, as providers expect.
"""

from __future__ import annotations

from typing import Any

NULL = {"type": "null"}


def for_model(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without the null branches and null defaults of optional fields."""
    compact: dict[str, Any] = _compact(schema)
    if compact.get("type") == "object":
        compact.setdefault("required", [])
    return compact


def _compact(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = _without_null_branch(node)
    return {key: _compact(value) for key, value in node.items() if not _null_default(key, value)}


def _without_null_branch(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and NULL in branches):
        return node
    rest = [branch for branch in branches if branch != NULL]
    node = {key: value for key, value in node.items() if key != "anyOf"}
    if len(rest) == 1 and isinstance(rest[0], dict):
        return {**rest[0], **node}
    return {**node, "anyOf": rest} if rest else node


def _null_default(key: str, value: Any) -> bool:
    return key == "default" and value is None
