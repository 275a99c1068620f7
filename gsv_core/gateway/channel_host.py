"""The gateway as the channels' host (gsv_core.channels.host.ChannelHost): the chat
pipeline, session run states for journal replay, config writes for pairing, external
adapters' connections, media storage and audio transcription."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from gsv_core.channels.host import ChannelTurn
from gsv_core.gateway.chat_pipeline import answer_approval_press
from gsv_core.gateway.chat_pipeline import process_message
from gsv_core.gateway.host import GatewayHost
from gsv_core.protocol.messages import ImageBlock
from gsv_core.providers.registry import ProviderNotConfigured
from gsv_core.providers.registry import provider_settings

log = logging.getLogger(__name__)

TRANSCRIPTION_MODEL = "whisper-1"


class GatewayChannelHost(GatewayHost):
    async def dispatch(self, turn: ChannelTurn) -> dict[str, Any]:
        blocks: list[ImageBlock] = [image for image in turn.images]  # type: ignore[misc]
        return await process_message(
            self._gateway, turn.key, turn.text, turn.run_id, command_text=turn.raw_text,
            context=turn.context, images=blocks or None, channel=True,
        )  # fmt: skip

    async def run_status(self, key: str, run_id: str) -> tuple[str, dict[str, Any] | None]:
        return await (await self._gateway.sessions.actor(key)).run_status(run_id)

    async def resume(self, key: str, run_id: str, context: dict[str, Any]) -> str:
        return await (await self._gateway.sessions.actor(key)).resume_run(run_id, context)

    def approval_outcome(self, approval_id: str) -> Awaitable[str] | None:
        pending = self._gateway.approvals.pending()
        approval = next((a for a in pending if a.id == approval_id), None)
        return None if approval is None else self._gateway.approvals.outcome(approval)

    def answer_approval(self, approval_id: str, decision: str, context: dict[str, Any]) -> str:
        return answer_approval_press(self._gateway, approval_id, decision, context)

    async def allow_sender(self, channel: str, sender_id: str, owner: bool = False) -> None:
        for key in ("allowFrom", "owners") if owner else ("allowFrom",):
            await self._add_to(f"channels.{channel}.{key}", sender_id)

    async def _add_to(self, path: str, sender_id: str) -> None:
        try:
            current = self._gateway.config.setting(path)
        except KeyError:
            current = []
        listed = [str(entry) for entry in current or []]
        if sender_id not in listed:
            await self._gateway.config.set(path, [*listed, sender_id])

    def external_peer(self, channel: str, account_id: str) -> Any | None:
        entry = self._gateway.registry.channels.get(f"{channel}:{account_id}")
        return entry.peer if entry is not None else None

    async def store_image(self, key: str, data: bytes, mime_type: str) -> dict[str, Any]:
        return dict(await self._gateway.sessions.host.media.save_image(key, data, mime_type))

    async def transcribe(self, data: bytes, mime_type: str) -> str | None:
        """Speech to text with an OpenAI-compatible `audio.transcriptions` endpoint, when
        `transcription.provider` is usable (its key found as for models: config, then
        `apiKeys`, then the environment); None otherwise (the agent gets a placeholder)."""
        config = self.config()
        provider = str((config.get("transcription") or {}).get("provider") or "openai")
        try:
            endpoint = provider_settings(config, provider)
        except ProviderNotConfigured as exc:
            log.info("no transcription: %s", exc.message)
            return None
        if endpoint.api != "openai":
            log.info("no transcription: provider %s does not speak the OpenAI API", provider)
            return None
        settings = (config.get("providers") or {}).get(provider) or {}
        import openai  # lazily: only channels with voice messages need it

        extension = mime_type.split("/")[-1].split(";")[0] or "ogg"
        try:
            async with openai.AsyncOpenAI(api_key=endpoint.api_key, base_url=endpoint.base_url,
                                          max_retries=1, timeout=60) as client:  # fmt: skip
                result = await client.audio.transcriptions.create(
                    model=str(settings.get("transcriptionModel") or TRANSCRIPTION_MODEL),
                    file=(f"voice.{extension}", data, mime_type),
                )
        except openai.OpenAIError as exc:
            log.warning("transcription with %s failed: %s", provider, exc)
            return None
        text = getattr(result, "text", None)
        return text.strip() if isinstance(text, str) and text.strip() else None
