"""What a session needs from the process that hosts it (the gateway), as a Protocol:
config, a clock, event broadcast, tools, providers, media and the system prompt. The
agent package never imports the gateway; the gateway implements this."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any
from typing import Protocol

from gsv_core.agent.compaction import CompactionNote
from gsv_core.agent.prompt import PromptInputs
from gsv_core.agent.tools import ToolExecutor
from gsv_core.errors import GsvError
from gsv_core.providers.base import Provider
from gsv_core.storage.media import MediaStore
from gsv_core.usage.budget import Reached
from gsv_core.usage.ledger import ModelCall

ExecSink = Callable[[dict[str, Any]], Awaitable[None]]


class AgentHost(Protocol):
    @property
    def tools(self) -> ToolExecutor: ...

    @property
    def media(self) -> MediaStore: ...

    def config(self) -> dict[str, Any]:
        """The effective gateway config (secrets included; never shown to users as is)."""
        ...

    def now_ms(self) -> int: ...

    def emit(self, event: str, payload: dict[str, Any]) -> None:
        """Send an event to the clients that follow this session."""
        ...

    def provider(self, name: str, llm_timeout: float) -> Provider:
        """The provider called `name`; raises ProviderFailed telling the user how to set
        it up when it is unknown or has no key."""
        ...

    def providers(
        self, name: str, llm_timeout: float, *, last_resort: bool = True
    ) -> list[Provider]:
        """The provider called `name` once per API key that may be tried now, in turn
        (docs/models.md#key-pools); ProviderFailed as `provider()`, or when every key is
        set aside. Only the last key of the last model (`last_resort`) gets the whole
        retry policy; before another key or model, one retry."""
        ...

    async def key_failed(self, provider: Provider, error: GsvError) -> bool:
        """Set the key `provider` used aside when `error` is about it (rejected, rate
        limited, out of quota); True when it was."""
        ...

    async def reported_window(self, provider: str, model: str) -> int | None:
        """The context window `provider`'s server reports for `model` (Ollama), or None."""
        ...

    async def system_prompt(self, inputs: PromptInputs) -> str: ...

    async def archive(
        self, agent_id: str, name: str, messages: list[dict[str, Any]], meta: dict[str, Any]
    ) -> str:
        """Store a transcript as gzip JSONL at `agents/{agentId}/sessions/{name}.jsonl.gz`
        in the workspace; returns that workspace path."""
        ...

    async def remember(self, agent_id: str, note: CompactionNote) -> str:
        """Append what a compaction summarised to the agent's daily memory file (today,
        in the user's timezone), with where the transcript is archived; that file's path."""
        ...

    def watch_exec(self, node_id: str, process_id: str, sink: ExecSink, call_id: str) -> None:
        """Deliver the end of a background node process to `sink`."""
        ...

    async def record_usage(self, call: ModelCall) -> None:
        """Enter one answered model call in the usage ledger (never raises)."""
        ...

    def usage_writer(self, call: ModelCall) -> Callable[[Any], None]:
        """`record_usage` as a write for the transaction storing the reply that reports
        the call (`SessionStore.append`'s `also`); call `usage_written` once it is stored."""
        ...

    async def usage_written(self) -> None:
        """After a `usage_writer` write: the ledger's daily pruning, when due."""
        ...

    async def usage_report(self, since: int, until: int, group: str) -> dict[str, Any]:
        """The ledger summed by `group` over `since <= at < until` (epoch ms)."""
        ...

    async def budget_reached(self, agent_id: str, source: str) -> Reached | None:
        """The budget a run from `source` may not spend past, if one is reached (the
        owner is told, once a day per budget)."""
        ...

    async def budget_status(self) -> dict[str, Any]:
        """Limits, today's and this month's spend, and which budgets are reached."""
        ...

    async def set_budget(self, name: str, usd: float | bool) -> None:
        """Change one budget (`/budget`); False turns it off."""
        ...
