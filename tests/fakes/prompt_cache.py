"""Anthropic prompt caching as the API documents it, for the fake LLM server: which part
of a Messages request is read from cache, written to it, or neither.

The rules modelled (docs.anthropic.com, "Prompt caching"):
- the prompt is the prefix tools -> system -> messages, in blocks: each tool, each system
  block, each content block of each message (a string content is one block);
- a block with `cache_control` is a breakpoint (at most four per request, else 400);
  the prefix up to it is written to the cache when it is at least `min_tokens` long;
- a later request reads the longest cached prefix that ends at one of its breakpoints or
  at one of the `LOOKBACK` blocks before each;
- usage: `cache_read_input_tokens` is what was read, `cache_creation_input_tokens` what
  was written (from the end of the read part to the last breakpoint), `input_tokens` the
  rest (after the last breakpoint).
Tokens are estimated as JSON characters / 4; `cache_control` itself does not count
and does not change what matches (moving a breakpoint keeps the cache valid).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

LOOKBACK = 20
MAX_BREAKPOINTS = 4
MIN_TOKENS = 1024  # the documented minimum for Sonnet and Opus models


class TooManyBreakpoints(ValueError):
    pass


@dataclass(frozen=True)
class CacheUsage:
    input_tokens: int
    cache_read: int
    cache_write: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read + self.cache_write


def prompt_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's prompt as one list of blocks, in the order the cache reads it."""
    blocks: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks += system
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"role": message.get("role"), "text": content})
        else:
            blocks += [{"role": message.get("role"), **block} for block in content or []]
    return blocks


def estimate_tokens(block: dict[str, Any]) -> int:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return max(1, len(json.dumps(plain, separators=(",", ":"), sort_keys=True)) // 4)


class PromptCache:
    """The cache of one fake server (thread-safe: the server answers in threads)."""

    def __init__(self, min_tokens: int = MIN_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._prefixes: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any]) -> CacheUsage:
        blocks = prompt_blocks(body)
        breakpoints = [i for i, block in enumerate(blocks) if "cache_control" in block]
        if len(breakpoints) > MAX_BREAKPOINTS:
            raise TooManyBreakpoints(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control")
        sizes = [estimate_tokens(block) for block in blocks]
        ends = _running_sums(sizes)  # ends[i]: tokens of blocks[0..i]
        keys = _prefix_keys(blocks)
        with self._lock:
            hit = self._longest_hit(breakpoints, keys)
            read = ends[hit] if hit >= 0 else 0
            last = breakpoints[-1] if breakpoints else -1
            write = 0
            if last > hit and ends[last] >= self.min_tokens:
                write = ends[last] - read
                self._prefixes.update(keys[b] for b in breakpoints if ends[b] >= self.min_tokens)
        total = ends[-1] if ends else 0
        return CacheUsage(total - read - write, read, write)

    def _longest_hit(self, breakpoints: list[int], keys: list[str]) -> int:
        hit = -1
        for point in breakpoints:
            for index in range(point, max(point - LOOKBACK, -1), -1):
                if keys[index] in self._prefixes:
                    hit = max(hit, index)
                    break
        return hit


def _running_sums(sizes: list[int]) -> list[int]:
    ends, total = [], 0
    for size in sizes:
        total += size
        ends.append(total)
    return ends


def _prefix_keys(blocks: list[dict[str, Any]]) -> list[str]:
    """A digest of each prefix blocks[0..i], blind to where the breakpoints are."""
    digest = hashlib.sha256()
    keys = []
    for block in blocks:
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        digest.update(json.dumps(plain, sort_keys=True).encode())
        keys.append(digest.copy().hexdigest())
    return keys
