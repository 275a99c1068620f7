"""One run of the agent loop: call the model with the system prompt, the
history and the tools; stream its text as `delta` events; run the tool calls it makes,
in order, storing each result as it arrives; repeat until a reply without tool calls.

A run is an asyncio task owned by its session. Stopping it cancels the task, which
cancels the model stream and any tool call in flight: nothing of a cancelled run is
stored or broadcast afterwards. `agent.maxToolSteps` (steps that call tools) and
`timeouts.llmMs` end runaway runs with a clear error instead of looping on.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import logging
import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol
from typing import cast

from gsv_core.agent.compaction import context_window
from gsv_core.agent.compaction import estimate_text
from gsv_core.agent.compaction import estimate_text_length
from gsv_core.agent.compaction import needs_compaction
from gsv_core.agent.compaction import within_window
from gsv_core.agent.history import SessionHistory
from gsv_core.agent.host import AgentHost
from gsv_core.agent.model_choice import fallback_models
from gsv_core.agent.model_view import ModelView
from gsv_core.agent.oversized import message_limit
from gsv_core.agent.oversized import notice_text
from gsv_core.agent.oversized import why
from gsv_core.agent.prompt import NATIVE_PREFIX
from gsv_core.agent.prompt import ON_DEMAND
from gsv_core.agent.prompt import ON_DEMAND_NAMES
from gsv_core.agent.prompt import PromptInputs
from gsv_core.agent.shown_text import Shown
from gsv_core.agent.shown_text import ShownText
from gsv_core.agent.token_estimates import TokenEstimates
from gsv_core.agent.tools import SEARCH_TOOL
from gsv_core.agent.tools import SPAWN_TOOL
from gsv_core.agent.tools import ToolCallContext
from gsv_core.agent.tools import could_not_run
from gsv_core.agent.tools import error_result
from gsv_core.agent.tools import failure_message
from gsv_core.agent.tools import result_message
from gsv_core.authority import guest_area
from gsv_core.authority import is_guest
from gsv_core.config import agent_entry
from gsv_core.config import setting
from gsv_core.errors import ContextOverflow
from gsv_core.errors import GsvError
from gsv_core.errors import ProviderFailed
from gsv_core.errors import ToolFailed
from gsv_core.protocol import events
from gsv_core.protocol.excerpt import cut_strings
from gsv_core.protocol.messages import AssistantMessage
from gsv_core.protocol.messages import Message
from gsv_core.protocol.messages import ToolCallBlock
from gsv_core.protocol.messages import ToolResultMessage
from gsv_core.protocol.messages import Usage
from gsv_core.protocol.messages import add_usage
from gsv_core.protocol.messages import empty_usage
from gsv_core.protocol.messages import text_of
from gsv_core.protocol.messages import tool_calls
from gsv_core.protocol.schemas.nodes import split_tool_name
from gsv_core.providers.base import AssistantBuilder
from gsv_core.providers.base import MessageMemo
from gsv_core.providers.base import ModelRequest
from gsv_core.providers.base import Provider
from gsv_core.providers.base import TextDelta
from gsv_core.providers.base import TextRetracted
from gsv_core.providers.failover import Restart
from gsv_core.providers.failover import Switched
from gsv_core.providers.failover import stream_with_failover
from gsv_core.providers.tool_call_modes import OFF
from gsv_core.storage.sessions import SessionRecord
from gsv_core.storage.sessions import run_closer
from gsv_core.usage.ledger import CHAT
from gsv_core.usage.ledger import ModelCall

log = logging.getLogger(__name__)

RUNNING = "running"
TOOL_ARGS_PREVIEW = 16_384  # characters of a call's arguments a `chat.tool` event carries
OVERFLOW_AFTER_COMPACTION = (
    "The conversation no longer fits the model's context window, even after compacting it. "
    "Start afresh with /reset."
)


def too_many_steps(limit: int) -> str:
    """Why a run that kept calling tools was stopped, and how to allow more steps."""
    return (
        f"Run stopped after {limit} steps of tool calls without a final answer: "
        f"agent.maxToolSteps ({limit}) keeps a run that loops from calling tools without "
        "end. Ask again to let it go on, or allow more steps with "
        "`gsv config set agent.maxToolSteps N`."
    )


class RunFailed(GsvError):
    """A run ended without a final answer: stopped, interrupted, or the model or a limit
    failed (its message goes to the user as is)."""

    code = 500


@dataclass
class RunState:
    """A run in flight: its id, per-message overrides and what it has done so far."""

    run_id: str
    overrides: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] | None = None  # where the run came from (channel, cron ...)
    task: asyncio.Task[None] | None = None
    cancel_reason: str | None = None
    settled: bool = False  # the run's outcome is known; it is only closing its books
    final: dict[str, Any] | None = None  # the final assistant message, once settled
    error: str | None = None  # or why the run failed
    usage: Usage = field(default_factory=empty_usage)
    tools_in_flight: int = 0
    compaction_attempted: bool = False
    cut_noticed: bool = False  # the user was told their message was cut for the model
    closed_in_store: bool = False  # its row went with its final reply (`_store_reply`)
    tighter_cuts: bool = False  # an overflow came all the same: cut big messages more
    source: str = CHAT  # what started it, for the usage ledger (gsv_core/usage/ledger.py)
    # tool name -> why it could not run, for calls the model has not since made work
    # (docs/cron.md, "When a run fails")
    unrecovered_tools: dict[str, str] = field(default_factory=dict)


class RunSession(Protocol):
    """What a run uses of its session (the session actor implements it); the loop never
    imports the actor, which starts the loop."""

    # the actor's own attributes (a run reads them and never rebinds them)
    host: AgentHost
    record: SessionRecord
    is_main: bool
    token_estimates: TokenEstimates
    model_view: ModelView

    @property
    def key(self) -> str: ...

    @property
    def agent_id(self) -> str: ...

    @property
    def transcript(self) -> SessionHistory:
        """The session's stored messages: read them, append the run's (persist)."""
        ...

    def emit(self, event: str, run: RunState, **fields: Any) -> None: ...

    async def take_turn(self, hold: bool = True) -> None:
        """Wait, briefly, while messages are being acknowledged (ack_first.py; not with
        `hold` False), then for this run's place in the round."""
        ...

    def emit_chat(self, run: RunState, state: str, **fields: Any) -> None: ...

    def effective_model(self, run: RunState | None = None) -> tuple[str, str]: ...

    async def auto_compact(
        self, provider: Provider, model: str, window: int, source: str
    ) -> dict[str, Any] | None: ...

    async def ingest_exec(
        self, completion: dict[str, Any], context: dict[str, Any] | None = None
    ) -> None: ...


class RunLoop:
    def __init__(self, session: RunSession, run: RunState) -> None:
        self.session = session
        self.run = run
        self.host = session.host
        self._cut_in_request = False  # the last request sent a message as an excerpt

    # -- the loop -----------------------------------------------------------------------
    async def execute(self) -> AssistantMessage:
        """Run to the final answer; returns it (stored; the session broadcasts it)."""
        reached = await self.host.budget_reached(self.session.agent_id, self.run.source)
        if reached is not None:
            raise RunFailed(reached.message())
        self._find_named_tools()
        limit = int(self._setting("agent.maxToolSteps"))
        for _ in range(limit):  # each pass that does not return is a step calling tools
            await self.session.take_turn()
            assistant = await self._call_model()
            await self._store_reply(assistant)
            self.run.usage = add_usage(self.run.usage, assistant["usage"])
            calls = tool_calls(assistant)
            if not calls:
                return assistant  # the session announces it once the run is closed
            if text_of(assistant).strip():
                self.session.emit_chat(self.run, "partial", message=assistant)
            for batch in _batches(calls):
                await self.session.take_turn()
                await self._run_batch(batch)
        raise RunFailed(too_many_steps(limit))

    def _find_named_tools(self) -> None:
        """A run given on-demand gateway tools by name (a sub-agent told to use them) has
        them from its first step: they are found for it, as a search by the model would."""
        patterns = self.run.overrides.get("tools")
        named = [p for p in patterns if isinstance(p, str)] if isinstance(patterns, list) else []
        on_demand = [n for n in named if n in ON_DEMAND_NAMES]
        if on_demand:
            self.host.tools.find(on_demand, self._tool_context(""))

    def _setting(self, path: str) -> Any:
        return setting(self.host.config(), path)

    async def _store_reply(self, assistant: AssistantMessage) -> None:
        """The reply and its usage-ledger row, in one transaction; a final reply (no tool
        calls: the run ends with it) closes the run's row in it too, a write a turn fewer."""
        call = ModelCall(self.session.agent_id, self.session.key, self.run.source,
                         assistant["provider"], assistant["model"], assistant["usage"])  # fmt: skip
        writes = [self.host.usage_writer(call)]
        final = not tool_calls(assistant)
        if final:
            writes.append(run_closer(self.run.run_id))

        def write_all(conn: Any) -> None:
            for write in writes:
                write(conn)

        await self.session.transcript.persist([assistant], usage=assistant["usage"], also=write_all)
        self.run.closed_in_store = final
        await self.host.usage_written()

    # -- the model ----------------------------------------------------------------------
    async def _call_model(self) -> AssistantMessage:
        provider_name, model_id = self.session.effective_model(self.run)
        timeout = max(1000, int(self._setting("timeouts.llmMs"))) / 1000

        def summariser() -> Provider:  # only when compacting: not resolved every step
            return self.host.provider(provider_name, timeout)

        reported = await self.host.reported_window(provider_name, model_id)
        window = context_window(self.host.config(), provider_name, model_id, reported)
        request = await self._request(model_id, (provider_name, model_id), window)
        if self._compaction_enabled() and self._over_budget(request, window):
            await self.session.auto_compact(summariser(), model_id, window, self.run.source)
            request = await self._request(model_id, (provider_name, model_id), window)
        try:
            return await self._stream(request, (provider_name, model_id), timeout)
        except ContextOverflow:
            # the provider's own count disagreed with our estimate: once a run, cut big
            # messages tighter (a dense text) and compact, then retry once
            if self.run.compaction_attempted:
                raise ProviderFailed(OVERFLOW_AFTER_COMPACTION) from None
            self.run.compaction_attempted = True
            self.run.tighter_cuts = retry = self._cut_in_request
            if self._compaction_enabled():
                compacted = await self.session.auto_compact(
                    summariser(), model_id, window, self.run.source
                )
                retry = retry or compacted is not None
            if not retry:
                raise ProviderFailed(OVERFLOW_AFTER_COMPACTION) from None
            request = await self._request(model_id, (provider_name, model_id), window)
            try:
                return await self._stream(request, (provider_name, model_id), timeout)
            except ContextOverflow:
                raise ProviderFailed(OVERFLOW_AFTER_COMPACTION) from None

    def _compaction_enabled(self) -> bool:
        return bool(self._setting("compaction.enabled"))

    def _over_budget(self, request: ModelRequest, window: int) -> bool:
        reserve = within_window(int(self._setting("compaction.reserveTokens")), window)
        record = self.session.record
        return needs_compaction(
            request.messages,  # type: ignore[arg-type]
            window,
            reserve,
            record.last_input_tokens,
            estimate_text(request.system),
            self.session.token_estimates.total(request.messages),
        )

    async def _stream(
        self, request: ModelRequest, model: tuple[str, str], timeout: float
    ) -> AssistantMessage:
        """The step's answer from the first model of the chain that gives one; the chat
        sees each word once however many attempts it took (shown_text.py)."""
        builder = AssistantBuilder(*model)
        shown = ShownText()
        switched: Switched | None = None
        models = [model, *self._fallbacks(model)]

        def resolve(name: str, more_follow: bool) -> list[Provider]:
            return self.host.providers(name, timeout, last_resort=not more_follow)

        chain = stream_with_failover(models, request, resolve, timeout, self.host.key_failed)
        async for event in chain:
            # a reply arrives in pieces a crowd of runs would all parse in one pass of the
            # loop (a fast model sends its whole answer at once): each takes a turn, without
            # waiting for acks (a steady flow of messages would hold every piece)
            await self.session.take_turn(hold=False)
            if isinstance(event, Restart | Switched):
                await self._record_voided(builder, request)
                if isinstance(event, Switched):
                    switched = event
                    builder = AssistantBuilder(event.provider, event.model)
                else:
                    builder = AssistantBuilder(builder.provider, builder.model)
                shown.restart()
                continue
            builder.add(event)
            if isinstance(event, TextDelta) and event.text:
                self._show(shown.add(event.text))
            elif isinstance(event, TextRetracted):
                self._show(shown.retract())
        self._show(shown.finish())
        message = builder.message(self.host.now_ms())
        if not message["content"]:
            raise ProviderFailed("The model returned an empty response.")
        if switched is not None:
            self.session.emit(events.SESSION_NOTICE, self.run, kind="failover",
                              text=switched.line(), details={"provider": switched.provider,
                              "model": switched.model, "reason": switched.reason})  # fmt: skip
        return message

    async def _record_voided(self, builder: AssistantBuilder, request: ModelRequest) -> None:
        """An attempt cut after it began streaming was billed all the same: its usage goes
        in the ledger and the run's total, though its words are thrown away. Streams report
        usage at their end, so what a cut one did not report is estimated: the whole
        request in, what came out. One refused before a word (nothing streamed) cost
        nothing."""
        streamed = builder.streamed_chars()
        if not streamed and not builder.usage["total"]:
            return
        sent = estimate_text(request.system) + self.session.token_estimates.total(request.messages)
        usage = builder.usage.copy()
        usage["input"] = usage["input"] or sent
        usage["output"] = usage["output"] or estimate_text_length(streamed)
        usage["total"] = usage["input"] + usage["output"]
        call = ModelCall(self.session.agent_id, self.session.key, self.run.source,
                         builder.provider, builder.model, usage)  # fmt: skip
        await self.host.record_usage(call)
        self.run.usage = add_usage(self.run.usage, usage)

    def _show(self, shown: Shown | None) -> None:
        if shown is None:
            return
        if shown.replace:
            self.session.emit_chat(self.run, "delta", text=shown.text, replace=True)
        else:
            self.session.emit_chat(self.run, "delta", text=shown.text)

    def _fallbacks(self, model: tuple[str, str]) -> list[tuple[str, str]]:
        """The models tried after `model` when it cannot answer (model_choice.py)."""
        return fallback_models(self.session.record, self.host.config(), model)

    async def _request(self, model_id: str, model: tuple[str, str], window: int) -> ModelRequest:
        ctx = self._tool_context("")
        tools = self._offers_tools(model[0])
        specs = [s for s in self.host.tools.specs(ctx) if self._allowed(s.name)] if tools else []
        inputs = PromptInputs(
            agent_id=self.session.agent_id,
            session_key=self.session.key,
            main_session=self.session.is_main,
            model=model,
            tools=specs,
            # session > the agent's own (agents.list) > the global systemPrompt
            base_prompt=self.session.record.settings.get("systemPrompt")
            or agent_entry(self.host.config(), self.session.agent_id).get("systemPrompt")
            or self._setting("systemPrompt"),
            timezone=str(self._setting("userTimezone")),
            channel=(self.run.context or {}).get("channel"),
            on_demand=[
                name
                for name in ON_DEMAND
                if tools
                and self._allowed(NATIVE_PREFIX + name)
                and self.host.tools.offers(NATIVE_PREFIX + name, ctx)
            ],
            guest_area=self._guest_area(),
        )
        system = await self.host.system_prompt(inputs)
        # the prompt's files were read in a thread: what follows (history, the request
        # built and sent) is a run's heaviest step, so it waits for a turn like any other,
        # or every run whose read ends in the same pass would build at once
        await self.session.take_turn()
        history, memo = await self._model_history(window)
        thinking = self.run.overrides.get("thinkLevel") or self.session.record.settings.get(
            "thinkingLevel", "none"
        )
        max_tokens = self.session.record.settings.get("maxTokens")
        return ModelRequest(
            model=model_id,
            system=system,
            messages=history,
            tools=specs,
            thinking=str(thinking),
            max_tokens=int(max_tokens) if isinstance(max_tokens, int) else None,
            cache_key=self.session.record.session_id,  # a uuid: new after a reset
            memo=memo,
        )

    def _offers_tools(self, provider_name: str) -> bool:
        """False for a provider set to `toolCalls: off`: its models get no tools and a
        prompt that lists none (providers/tool_call_modes.py)."""
        entry = (self.host.config().get("providers") or {}).get(provider_name)
        return not (isinstance(entry, dict) and entry.get("toolCalls") == OFF)

    def _guest_area(self) -> str | None:
        """A guest's run: its folder (the prompt tells it nothing of the owner's)."""
        context = self.run.context
        return guest_area(context) if context is not None and is_guest(context) else None

    async def _model_history(self, window: int) -> tuple[list[Message], MessageMemo | None]:
        """The history as the model sees it: failed replies left out, a message too big
        for the window cut to an excerpt (oversized.py), images inlined; with the memo of
        the wire form of its messages when it holds no images (their bytes are not kept
        in memory between calls)."""
        reserve = within_window(int(self._setting("compaction.reserveTokens")), window)
        limit = message_limit(window, reserve, self.run.tighter_cuts)
        stored = await self.session.transcript.messages()
        sent = self.session.model_view.sent(stored, limit, why(window))
        self._cut_in_request = any(entry.cut for entry in sent)
        if self._cut_in_request:
            for entry in sent:
                if entry.cut and entry.stored.get("runId") == self.run.run_id:
                    self._notice_cut(entry.stored, entry.cut, window)
        if not any(entry.media for entry in sent):
            plain = cast(list[Message], [entry.message for entry in sent])
            return plain, self.session.model_view.wire
        hydrated = [
            await self._hydrated(entry.message) if entry.media else cast(Message, entry.message)
            for entry in sent
        ]
        return hydrated, None

    def _notice_cut(self, message: dict[str, Any], cut: int, window: int) -> None:
        """Tell the user, once a run, that the message it answers was cut for the model."""
        if self.run.cut_noticed:
            return
        self.run.cut_noticed = True
        text = notice_text(message, cut, window)
        details = {"chars": len(text_of(message)), "cutChars": cut, "contextWindow": window}
        self.session.emit(events.SESSION_NOTICE, self.run, kind="cut", text=text,
                          details=details)  # fmt: skip

    async def _hydrated(self, message: dict[str, Any]) -> Any:
        """The message with its stored images read in (`model_view.has_media`)."""
        blocks = []
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "image" and block.get("mediaPath"):
                data = await self.host.media.load(block["mediaPath"])
                if data is None:
                    blocks.append({"type": "text", "text": "[Image no longer available]"})
                    continue
                encoded = base64.b64encode(data).decode()
                blocks.append({"type": "image", "mimeType": block["mimeType"], "data": encoded})
            else:
                blocks.append(block)
        return {**message, "content": blocks}

    # -- tools --------------------------------------------------------------------------
    def _tool_context(self, call_id: str) -> ToolCallContext:
        return ToolCallContext(
            session_key=self.session.key,
            agent_id=self.session.agent_id,
            run_id=self.run.run_id,
            call_id=call_id,
            main_session=self.session.is_main,
            channel_context=self.run.context,
            run_source=self.run.source,
        )

    def _allowed(self, name: str) -> bool:
        """Whether this run may use tool `name`: a run given a tool subset (a sub-agent)
        only those, and never gsv__Spawn (a sub-agent does not spawn)."""
        patterns = self.run.overrides.get("tools")
        if not isinstance(patterns, list) or name == SEARCH_TOOL:
            return True  # the search finds only tools; calling one still needs a pattern
        return name != SPAWN_TOOL and any(fnmatch.fnmatchcase(name, p) for p in patterns)

    async def _run_batch(self, batch: list[ToolCallBlock]) -> None:
        """One call, or several gsv__Spawn calls at once; results stored in call order."""
        tasks = [asyncio.ensure_future(self._call_tool(call)) for call in batch]
        try:
            done = await asyncio.gather(*tasks)
        except BaseException:  # one failed unexpectedly: its siblings end with it
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        for call, (message, started) in zip(batch, done, strict=True):
            await self._record_tool(call, message, started)

    async def _call_tool(self, call: ToolCallBlock) -> tuple[ToolResultMessage, float]:
        name, call_id = call["name"], call["id"]
        # clients are sent a preview of huge arguments (a generated 1 MB command); the
        # history keeps them whole
        args, _ = cut_strings(call["arguments"], TOOL_ARGS_PREVIEW, "not shown")
        self._emit_tool(call, "start", args=args)
        started = time.monotonic()
        self.run.tools_in_flight += 1
        try:
            if not self._allowed(name):
                raise ToolFailed(f"{name} is not one of the tools this run was given")
            result = await self.host.tools.execute(
                name, call["arguments"], self._tool_context(call_id)
            )
        except GsvError as exc:
            message = error_result(call_id, name, failure_message(exc), self.host.now_ms())
            if could_not_run(exc):
                self.run.unrecovered_tools[name] = failure_message(exc)
        else:
            self.run.unrecovered_tools.pop(name, None)
            self._watch_background(name, call_id, result)
            message = await result_message(
                call_id, name, result, self.host.media, self.session.key, self.host.now_ms()
            )
        finally:
            self.run.tools_in_flight -= 1
        return message, started

    async def _record_tool(
        self, call: ToolCallBlock, message: ToolResultMessage, started: float
    ) -> None:
        await self.session.transcript.persist([message])
        duration = int((time.monotonic() - started) * 1000)
        summary = text_of(message)
        self._emit_tool(call, "end", isError=message["isError"], durationMs=duration,
                        summary=summary[:200])  # fmt: skip

    def _emit_tool(self, call: ToolCallBlock, phase: str, **fields: Any) -> None:
        payload = {"callId": call["id"], "name": call["name"], "phase": phase, **fields}
        self.session.emit(events.CHAT_TOOL, self.run, tool=payload)

    def _watch_background(self, name: str, call_id: str, result: Any) -> None:
        """A node command that went to the background reports its end later."""
        parts = split_tool_name(name)
        if parts is None or not isinstance(result, dict) or result.get("status") != RUNNING:
            return
        process_id = result.get("sessionId")
        if not isinstance(process_id, str) or not process_id:
            return
        context = self.run.context

        async def deliver(completion: dict[str, Any]) -> None:
            await self.session.ingest_exec(completion, context)

        self.host.watch_exec(parts[0], process_id, deliver, call_id)


def _batches(calls: list[ToolCallBlock]) -> list[list[ToolCallBlock]]:
    """The step's calls in order: consecutive gsv__Spawn calls together (sub-agents run at
    the same time), every other call alone (in the order the model gave)."""
    batches: list[list[ToolCallBlock]] = []
    for call in calls:
        if call["name"] == SPAWN_TOOL and batches and batches[-1][-1]["name"] == SPAWN_TOOL:
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches
