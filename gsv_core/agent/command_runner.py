"""Running slash commands against a session: the parsing and the exact texts
live in gsv_core.agent.commands; this module does what each command says."""

from __future__ import annotations

from dataclasses import dataclass

from gsv_core.agent import commands as c
from gsv_core.agent.levels import ModelRef
from gsv_core.agent.session import SessionActor
from gsv_core.errors import GsvError
from gsv_core.timezones import user_zone
from gsv_core.usage.budget import period_starts


@dataclass(frozen=True)
class CommandOutcome:
    command: str
    response: str | None = None
    error: str | None = None

    def to_result(self) -> dict[str, str]:
        result = {"status": "command", "command": self.command}
        if self.response is not None:
            result["response"] = self.response
        if self.error is not None:
            result["error"] = self.error
        return result


async def run_command(
    actor: SessionActor, command: c.ParsedCommand, *, channel: bool = False
) -> CommandOutcome:
    try:
        response = await _run(actor, command, channel)
    except c.CommandError as exc:
        return CommandOutcome(command.name, error=exc.message)
    except GsvError as exc:
        return CommandOutcome(command.name, error=c.format_command_failure(exc.message))
    return CommandOutcome(command.name, response=response)


async def _run(actor: SessionActor, command: c.ParsedCommand, channel: bool) -> str:
    name, args = command.name, command.args
    if name == "reset":
        result = await actor.reset()
        return c.format_reset(int(result["archivedMessages"]))
    if name == "compact":
        result = await actor.compact(c.parse_compact_count(args))
        return c.format_compact(int(result["keptMessages"]), int(result["trimmedMessages"]))
    if name == "stop":
        stopped = await actor.stop()
        return c.format_stop(stopped.run_id, stopped.tools_cancelled, channel=channel)
    if name == "status":
        return c.format_status(await _status(actor), channel=channel)
    if name == "usage":
        return await _usage(actor)
    if name == "budget":
        return await _budget(actor, args, channel)
    if name == "model":
        return await _model(actor, args)
    if name == "think":
        return await _think(actor, args)
    return c.HELP_TEXT


async def _status(actor: SessionActor) -> c.SessionStatus:
    record = actor.record
    policy = record.reset_policy or {}
    return c.SessionStatus(
        session_key=actor.key,
        message_count=len(await actor.history()),
        input_tokens=record.usage["input"],
        output_tokens=record.usage["output"],
        model=ModelRef(*actor.effective_model()),
        thinking_level=record.settings.get("thinkingLevel"),
        reset_mode=policy.get("mode"),
    )


async def _usage(actor: SessionActor) -> str:
    """Today (from midnight in the user's timezone): this session's and everyone's."""
    host = actor.host
    now = host.now_ms()
    midnight, _ = period_starts(now, user_zone(host.config()))
    report = await host.usage_report(midnight, now + 1, "session")
    mine = next((g for g in report["groups"] if g["name"] == actor.key), None)
    return c.format_usage(mine, report["total"])


async def _budget(actor: SessionActor, args: str, channel: bool) -> str:
    """Show the budgets and today's spend; with `NAME USD|off`, set one (not from a
    messenger: whoever can write to the agent there must not lift its spending cap)."""
    if args.strip():
        if channel:
            raise c.CommandError(c.BUDGET_FROM_CHANNEL)
        name, usd = c.parse_budget_arg(args)
        await actor.host.set_budget(name, False if usd is None else usd)
    return c.format_budget(await actor.host.budget_status())


async def _model(actor: SessionActor, args: str) -> str:
    current = ModelRef(*actor.effective_model())
    if not args:
        return c.format_current_model(current)
    chosen = c.parse_model_arg(args, current)
    await actor.patch(settings={"model": {"provider": chosen.provider, "id": chosen.id}})
    return c.format_model_set(chosen)


async def _think(actor: SessionActor, args: str) -> str:
    if not args:
        return c.format_current_think(actor.record.settings.get("thinkingLevel"))
    level = c.parse_think_arg(args)
    await actor.patch(settings={"thinkingLevel": level})
    return c.format_think_set(level)
