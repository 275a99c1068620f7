"""The gateway as the sessions' host (gsv_core.agent.host.AgentHost): config, clock,
event broadcast to clients, tools, providers, media, system prompt and archives.

The system prompt reads the agent's workspace files in one thread hop per model call
(the skills list once per run); archives and extracted memories are written through the
workspace like any other file."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Any

from gsv_core.agent.compaction import CompactionNote
from gsv_core.agent.compaction import compaction_note_text
from gsv_core.agent.host import ExecSink
from gsv_core.agent.prompt import PromptInputs
from gsv_core.agent.prompt import build_system_prompt
from gsv_core.errors import GsvError
from gsv_core.errors import InvalidParams
from gsv_core.errors import ProviderFailed
from gsv_core.gateway.host import GatewayHost
from gsv_core.gateway.tool_router import GatewayToolRouter
from gsv_core.heartbeat.settings import settings_for
from gsv_core.protocol.events import CONVERSATION_EVENTS
from gsv_core.protocol.frames import EncodedEvent
from gsv_core.providers.base import Provider
from gsv_core.providers.retry import RetryPolicy
from gsv_core.storage.media import MediaStore
from gsv_core.timezones import zone
from gsv_core.usage.budget import Reached
from gsv_core.usage.ledger import ModelCall
from gsv_core.workspace import Workspace
from gsv_core.workspace.prompt import daily_memory_path
from gsv_core.workspace.prompt import workspace_sections

if TYPE_CHECKING:
    from gsv_core.gateway.state import Gateway

# (provider name, effective config, llm timeout) -> Provider; tests inject a fake here
ProviderFactory = Callable[[str, dict[str, Any], float], Provider]

log = logging.getLogger(__name__)


class GatewayAgentHost(GatewayHost):
    def __init__(
        self,
        gateway: Gateway,
        tools: GatewayToolRouter,
        media: MediaStore,
        workspace: Workspace,
        provider_factory: ProviderFactory | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(gateway)
        self._retry = retry  # tests record the waits instead of sleeping them
        self.tools = tools
        self.media = media
        self.workspace = workspace
        self._provider_factory = provider_factory
        # session key -> (run id, skills section) of the run in progress there
        self._skills_snapshots: dict[str, tuple[str, str]] = {}

    def emit(self, event: str, payload: dict[str, Any]) -> None:
        # every client sees every session's events (clients filter by sessionKey), unless
        # it named the sessions it follows (`chat.subscribe`: a hundred busy sessions
        # are not a hundred times the frames for each of them); a run that came from a
        # channel also answers there
        encoded = EncodedEvent(event, payload)  # its JSON built once for all of them
        key = payload.get("sessionKey") if event in CONVERSATION_EVENTS else None
        for peer in list(self._gateway.registry.clients.values()):
            if key is None or peer.watching is None or key in peer.watching:
                peer.send_encoded(encoded)
        if "channelContext" in payload:
            self._gateway.channels.outbox.post(event, payload)

    def provider(self, name: str, llm_timeout: float) -> Provider:
        if self._provider_factory is not None:
            return self._provider_factory(name, self.config(), llm_timeout)
        config = self.config()
        return self._gateway.providers.get(config, name, llm_timeout=llm_timeout,
                                           retry=self._retry or RetryPolicy(),
                                           key=self._first_usable_key(config, name))  # fmt: skip

    def _first_usable_key(self, config: dict[str, Any], name: str) -> str | None:
        """The key `provider()` calls with (the summariser's): the first not set aside, as
        the chat's chain tries them; None (the first) when every key is, so the call
        fails as the chain does rather than before it."""
        from gsv_core.providers.registry import provider_settings

        try:
            keys = self._gateway.keys.usable(name, provider_settings(config, name).api_keys)
        except ProviderFailed:
            return None
        return keys[0] if keys else None

    def providers(
        self, name: str, llm_timeout: float, *, last_resort: bool = True
    ) -> list[Provider]:
        if self._provider_factory is not None:
            return [self._provider_factory(name, self.config(), llm_timeout)]
        from gsv_core.providers.registry import provider_settings

        config = self.config()
        settings = provider_settings(config, name)
        keys = self._gateway.keys.usable(name, settings.api_keys)
        policy = self._retry or RetryPolicy()
        # with another key or model left, a refusal gets one retry (one retry-after
        # honoured) before the next is tried
        return [self._gateway.providers.get(config, name, llm_timeout=llm_timeout, key=key,
                                            retry=policy if last_resort and n == len(keys)
                                            else replace(policy, retries=1),
                                            settings=settings)
                for n, key in enumerate(keys, start=1)]  # fmt: skip

    async def key_failed(self, provider: Provider, error: GsvError) -> bool:
        key = getattr(provider, "api_key", None)
        if self._provider_factory is not None or not isinstance(key, str):
            return False
        return await self._gateway.keys.report(provider.name, key, error)

    async def reported_window(self, provider: str, model: str) -> int | None:
        from gsv_core.providers.registry import ProviderNotConfigured
        from gsv_core.providers.registry import provider_settings

        try:
            settings = provider_settings(self.config(), provider)
        except ProviderNotConfigured:
            return None  # the model call says what is missing
        return await self._gateway.windows.get(settings, model)

    async def system_prompt(self, inputs: PromptInputs) -> str:
        guest = inputs.guest_area is not None
        offered = {tool.name.partition("__")[0] for tool in inputs.tools}
        inputs.nodes = [node.to_wire() for node in self._gateway.nodes.inventory()
                        if not guest or node.nodeId in offered]  # fmt: skip
        today = self._local_now(inputs.timezone).date()
        files = await self.workspace.prompt_files(
            inputs.agent_id, inputs.main_session, today, guest
        )
        heartbeat = None if guest else self._heartbeat_prompt(inputs)
        inputs.workspace_sections = workspace_sections(files, heartbeat, inputs.guest_area)
        inputs.commissioning = files.commissioning
        if not inputs.commissioning and not guest:
            inputs.skills_section = await self._skills_section(inputs)
        return build_system_prompt(inputs)

    def _heartbeat_prompt(self, inputs: PromptInputs) -> str | None:
        """The agent's heartbeat prompt as the heartbeat itself reads it (merged per agent);
        None when its settings are broken (heartbeat.status says why)."""
        try:
            return settings_for(self.config(), inputs.agent_id).prompt
        except InvalidParams:
            return None

    async def _skills_section(self, inputs: PromptInputs) -> str:
        """The skills list, snapshotted on a run's first model call and reused for its
        later calls, so eligibility does not shift in the middle of a run."""
        actor = self._gateway.sessions.loaded(inputs.session_key)
        run_id = actor.current_run_id if actor is not None else None
        snapshot = self._skills_snapshots.get(inputs.session_key)
        if run_id is not None and snapshot is not None and snapshot[0] == run_id:
            return snapshot[1]
        tool_names = [tool.name for tool in inputs.tools]
        section = await self._gateway.skills.prompt_section(inputs.agent_id, tool_names)
        if run_id is not None:
            self._forget_ended_runs()
            self._skills_snapshots[inputs.session_key] = (run_id, section)
        return section

    def _forget_ended_runs(self) -> None:
        """Keep snapshots of runs still in progress only (every cron run has a new session
        key: without this the map would grow for ever)."""
        sessions = self._gateway.sessions
        self._skills_snapshots = {
            key: snapshot
            for key, snapshot in self._skills_snapshots.items()
            if (actor := sessions.loaded(key)) is not None and actor.current_run_id == snapshot[0]
        }

    async def archive(
        self, agent_id: str, name: str, messages: list[dict[str, Any]], meta: dict[str, Any]
    ) -> str:
        data = await asyncio.to_thread(_archive_bytes, messages, meta)
        path = f"sessions/{name}.jsonl.gz"
        key = await self.workspace.write_bytes(agent_id, path, data)
        try:
            await self._gateway.memory.archived(agent_id, path, messages, meta)
        except Exception:  # the archive is written; a reset must not fail for the index
            log.exception("indexing the archive %s of agent %s failed", path, agent_id)
        return key

    async def remember(self, agent_id: str, note: CompactionNote) -> str:
        now = self._local_now(self.config().get("userTimezone"))
        first_ref = None
        if note.archive:
            first_ref = await self._gateway.memory.first_ref(agent_id, note.archive)
        path = daily_memory_path(now.date())
        block = compaction_note_text(note, f"{now:%H:%M}", first_ref)
        await self.workspace.append(agent_id, path, block)
        return path

    def _local_now(self, timezone: str | None) -> dt.datetime:
        """Now in the user's timezone: daily memory files are named by the user's date."""
        return dt.datetime.fromtimestamp(self.now_ms() / 1000, zone(timezone))

    async def record_usage(self, call: ModelCall) -> None:
        await self._gateway.usage.record(call)

    def usage_writer(self, call: ModelCall) -> Callable[[Any], None]:
        return self._gateway.usage.writer(call)

    async def usage_written(self) -> None:
        await self._gateway.usage.prune_if_due()

    async def usage_report(self, since: int, until: int, group: str) -> dict[str, Any]:
        return await self._gateway.usage.report(since, until, group)

    async def budget_reached(self, agent_id: str, source: str) -> Reached | None:
        return await self._gateway.budget_hold(agent_id, source)

    async def budget_status(self) -> dict[str, Any]:
        return await self._gateway.budget.status()

    async def set_budget(self, name: str, usd: float | bool) -> None:
        await self._gateway.config.set(f"budget.{name}", usd)

    def watch_exec(self, node_id: str, process_id: str, sink: ExecSink, call_id: str) -> None:
        self._gateway.exec_events.watch(node_id, process_id, sink, call_id)


def _archive_bytes(messages: list[dict[str, Any]], meta: dict[str, Any]) -> bytes:
    """A transcript in the archive format of gsv_core.storage.archive (gzip JSON Lines,
    `{"meta": ...}` first), built in memory so the workspace backend stores it."""
    lines = [json.dumps({"meta": meta}, ensure_ascii=False)]
    lines += [json.dumps(message, ensure_ascii=False) for message in messages]
    return gzip.compress(("\n".join(lines) + "\n").encode("utf-8"))
