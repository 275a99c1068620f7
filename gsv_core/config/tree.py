"""A config as a tree of dicts, addressed by dotted paths (`model.id`): reading, setting
and removing a value, and merging one tree over another. No knowledge of what the
settings mean: that is `gsv_core.config`."""

from __future__ import annotations

import copy
from typing import Any

from gsv_core.errors import InvalidParams


def deep_merge(base: Any, override: Any) -> Any:
    """Objects merge recursively; anything else in `override` replaces `base`."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def split_path(path: str) -> list[str]:
    segments = path.split(".")
    if not path or any(not s for s in segments):
        raise InvalidParams(f"invalid config path {path!r}: use dot-separated names like model.id")
    return segments


def get_path(config: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) at a dotted path of a config tree."""
    node: Any = config
    for segment in split_path(path):
        if not isinstance(node, dict) or segment not in node:
            return False, None
        node = node[segment]
    return True, node


def put_path(tree: dict[str, Any], segments: list[str], value: Any) -> None:
    node = tree
    for segment in segments[:-1]:
        if not isinstance(node.get(segment), dict):
            node[segment] = {}
        node = node[segment]
    node[segments[-1]] = copy.deepcopy(value)


def remove_path(tree: dict[str, Any], segments: list[str]) -> None:
    head, rest = segments[0], segments[1:]
    if head not in tree:
        return
    if not rest:
        del tree[head]
        return
    child = tree[head]
    if isinstance(child, dict):
        remove_path(child, rest)
        if not child:  # prune emptied parents so defaults merge back in
            del tree[head]
