"""`gsv models list [--provider P] [--json]`: the models a provider offers, asked through
the gateway (it holds the keys); the one the next message uses is marked."""

from __future__ import annotations

from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import JsonOpt
from gsv_cli.state import CliState

# models.test's toolCalls, in words, and the providers.<name>.toolCalls that suits it
TOOL_CALLS = {
    "native": "native tool calls",
    "text": "tool calls as text",
    "none": "no tool calls",
}
MODE_HINTS = {"text": "text", "none": "off"}

# both commands ask one provider: the configured model's unless named
ProviderOpt = Annotated[
    str | None,
    typer.Option("--provider", "-p", help="Provider name (default: model.provider)."),
]

app = plain_app(help="The models your providers offer.", no_args_is_help=True)


@app.command("list")
def list_models(
    ctx: typer.Context,
    provider: ProviderOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """List a provider's models (its /models endpoint; a local Ollama's pulled models)."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MODELS_LIST

    state: CliState = ctx.obj
    params: dict[str, Any] = {"provider": provider} if provider else {}
    result = call(state, MODELS_LIST, params, timeout=60)
    if state.wants_json(json_output):
        output.print_json(result)
        return
    current = result.get("current")
    rows = [["*" if model == current else "", model] for model in result["models"]]
    output.print_table(["", f"{result['provider']} models"], rows, empty="no models offered")
    if current:
        output.print_hint("* the model in use; switch with: gsv config set model.id MODEL")


@app.command("test")
def test_model(
    ctx: typer.Context,
    provider: ProviderOpt = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model id (default: model.id).")
    ] = None,
) -> None:
    """Make one tiny live call and show the answer (or the provider's error and its fix),
    how the model calls tools, and its context window."""
    from gsv_cli.runner import call
    from gsv_core.protocol.methods import MODELS_TEST

    state: CliState = ctx.obj
    params = {k: v for k, v in (("provider", provider), ("model", model)) if v}
    result = call(state, MODELS_TEST, params, timeout=90)
    if state.json:
        output.print_json(result)
        return
    output.write_text(
        f"{result['provider']}/{result['model']} answered in {result['ms']} ms: "
        f"{result['reply'][:200]}\n"
    )
    calls = result.get("toolCalls", "none")
    output.write_text(f"tool calls: {TOOL_CALLS.get(calls, calls)}\n")
    window = result.get("contextWindow")
    reported = " (reported by the server)" if result.get("contextWindowReported") else ""
    output.write_text(f"context window: {window} tokens{reported}\n")
    if calls in MODE_HINTS:
        mode, name = MODE_HINTS[calls], result["provider"]
        output.print_hint(f"this model suits toolCalls {mode}: "
                          f"gsv config set providers.{name}.toolCalls {mode}")  # fmt: skip
