"""The gateway as the sessions' host (gsv_core.agent.host.AgentHost): config, clock,
event broadcast to clients, tools, providers, media, system prompt and archives."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gsv_core.agent.host import ExecSink
from gsv_core.agent.prompt import PromptInputs, build_system_prompt
from gsv_core.gateway.tool_router import GatewayToolRouter
from gsv_core.providers.base import Provider
from gsv_core.storage.archive import write_archive
from gsv_core.storage.media import MediaStore
from gsv_core.timezones import zone

if TYPE_CHECKING:
    from gsv_core.gateway.app import Gateway

# (provider name, effective config, llm timeout) -> Provider; tests inject a fake here
ProviderFactory = Callable[[str, dict[str, Any], float], Provider]


class GatewayAgentHost:
    def __init__(
        self,
        gateway: Gateway,
        tools: GatewayToolRouter,
        media: MediaStore,
        workspace: Path,
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        self._gateway = gateway
        self.tools = tools
        self.media = media
        self.workspace = workspace
        self._provider_factory = provider_factory

    def config(self) -> dict[str, Any]:
        return self._gateway.config.effective

    def now_ms(self) -> int:
        return self._gateway.now_ms()

    def emit(self, event: str, payload: dict[str, Any]) -> None:
        # every client sees every session's events (clients filter by sessionKey); a run
        # that came from a channel also answers there
        for peer in list(self._gateway.registry.clients.values()):
            peer.send_event(event, payload)
        if "channelContext" in payload:
            self._gateway.channels.outbox.post(event, payload)

    def provider(self, name: str, llm_timeout: float) -> Provider:
        if self._provider_factory is not None:
            return self._provider_factory(name, self.config(), llm_timeout)
        from gsv_core.providers.registry import resolve_provider  # the SDKs load lazily

        return resolve_provider(self.config(), name, llm_timeout=llm_timeout)

    async def system_prompt(self, inputs: PromptInputs) -> str:
        inputs.nodes = [node.to_wire() for node in self._gateway.nodes.inventory()]
        return build_system_prompt(inputs)

    async def archive(
        self, agent_id: str, name: str, messages: list[dict[str, Any]], meta: dict[str, Any]
    ) -> str:
        relative = f"agents/{agent_id}/sessions/{name}.jsonl.gz"
        await asyncio.to_thread(write_archive, self.workspace / relative, messages, meta)
        return relative

    async def remember(self, agent_id: str, memories: str) -> None:
        now = dt.datetime.fromtimestamp(
            self.now_ms() / 1000, zone(self.config().get("userTimezone"))
        )
        path = self.workspace / "agents" / agent_id / "memory" / f"{now:%Y-%m-%d}.md"
        block = f"### Extracted from context compaction ({now:%H:%M})\n\n{memories.strip()}\n"
        await asyncio.to_thread(_append_block, path, block)

    def watch_exec(self, node_id: str, process_id: str, sink: ExecSink, call_id: str) -> None:
        self._gateway.exec_events.watch(node_id, process_id, sink, call_id)


def _append_block(path: Path, block: str) -> None:
    """Append a markdown block after the file's content (right-trimmed), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8").rstrip() if path.exists() else ""
    text = f"{existing}\n\n{block}" if existing else block
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
