"""Tools found on demand. The gateway tools most turns do not need (ON_DEMAND in
gsv_core/agent/prompt.py, which names them in the system prompt) are never in the request
until a search finds them; and when more tools are on offer than `tools.inlineLimit`
schemas, the other nodes' and MCP servers' tools stay out too, leaving the gateway's other
tools and the first node's. `gsv__ToolSearch` is offered whenever something is left out;
a tool found in a run is offered in that run's next steps (and may be called).
`tools.list` still lists every tool.

Ranking is plain and predictable: each query word (filler such as "a" or "me" aside)
found in a tool's name counts 3, in its description (and an on-demand tool's purpose, as
the system prompt gives it) 1; the whole query as the name (or its part after `__`) wins
outright.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from gsv_core.agent.prompt import NATIVE_PREFIX
from gsv_core.agent.prompt import ON_DEMAND
from gsv_core.agent.prompt import ON_DEMAND_NAMES
from gsv_core.agent.tools import SEARCH_TOOL
from gsv_core.protocol.schemas.nodes import TOOL_SEPARATOR
from gsv_core.protocol.schemas.nodes import is_mcp_name
from gsv_core.providers.base import ToolSpec

DEFAULT_LIMIT = 5
RUNS_KEPT = 256  # runs whose found tools are remembered (older ones are forgotten)
_WORDS = re.compile(r"[a-z0-9]+")
# words of a query that say nothing about a tool (and, short, are inside most names)
_FILLER = frozenset({
    "a", "an", "and", "at", "be", "by", "for", "from", "i", "in", "is", "it", "me", "my",
    "of", "on", "or", "the", "to", "with",
})  # fmt: skip

SEARCH_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "What the tool should do, or its name.",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": DEFAULT_LIMIT},
    },
    "required": ["query"],
}


def search_spec(hidden: int) -> ToolSpec:
    description = (
        f"Find a tool left out of this request ({hidden} are: the gateway tools the system "
        "prompt names, and past the inline limit other nodes' and MCP tools). Returns the "
        "best matches with their schemas; you can call them in your next step."
    )
    return ToolSpec(SEARCH_TOOL, description, SEARCH_SCHEMA)


def inline_set(native: list[ToolSpec], rest: list[ToolSpec], limit: int) -> list[ToolSpec]:
    """The tools put in every request: the gateway's own but those on demand; past
    `limit`, of the rest only the first node's (one machine's tools are the everyday ones)."""
    native = [spec for spec in native if spec.name not in ON_DEMAND_NAMES]
    if len(native) + len(rest) <= limit:
        return [*native, *rest]
    first = rest[0].name.split(TOOL_SEPARATOR, 1)[0] + TOOL_SEPARATOR if rest else None
    return [*native, *(s for s in rest if first is not None and s.name.startswith(first)
                      and not is_mcp_name(s.name))]  # fmt: skip


def rank(query: str, specs: list[ToolSpec], limit: int) -> list[ToolSpec]:
    wanted = query.strip().lower()
    words = [word for word in _WORDS.findall(wanted) if word not in _FILLER]
    scored = []
    for index, spec in enumerate(specs):
        name, text = spec.name.lower(), _text(spec)
        score = 1000 if wanted in (name, name.rsplit(TOOL_SEPARATOR, 1)[-1]) else 0
        score += sum(3 * (word in name) + (word in text) for word in words)
        if score:
            scored.append((-score, index, spec))
    return [spec for _, _, spec in sorted(scored)[:limit]]


def _text(spec: ToolSpec) -> str:
    """What a query's words are looked for in: the description and, for an on-demand
    gateway tool, what the system prompt says it is for (the words the model has seen)."""
    use = ON_DEMAND[spec.name[len(NATIVE_PREFIX) :]] if spec.name in ON_DEMAND_NAMES else ""
    return f"{spec.description} {use}".lower()


class FoundTools:
    """Per run, the tools a search found (offered from the next step on)."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, set[str]] = OrderedDict()

    def add(self, run_id: str, names: list[str]) -> None:
        self._runs.setdefault(run_id, set()).update(names)
        self._runs.move_to_end(run_id)
        while len(self._runs) > RUNS_KEPT:
            self._runs.popitem(last=False)

    def of(self, run_id: str) -> set[str]:
        return self._runs.get(run_id, set())
