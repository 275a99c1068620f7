"""`gsv onboard`: from nothing to a model that answers, in one command.

    gsv onboard                                   asks: provider, key (hidden), model
    gsv onboard --provider ollama --yes           a local Ollama, its first model
    gsv onboard --provider openai --key-env OPENAI_API_KEY --model gpt-5 --yes
    gsv onboard --provider custom --base-url http://127.0.0.1:8000/v1 --model m --yes

Steps: make sure a gateway answers (start a local one when asked to); pick the provider
(a local Ollama is found when 127.0.0.1:11434 answers); take the key hidden and keep it in
the gateway's secret store, never echoed; list the provider's models and pick one; make
one tiny live test call and show the answer, or the provider's error with its fix; then,
optionally, connect a messenger (gsv_cli/onboard_finish.py) and install the gateway and
node as user services. Every question has a flag, so scripts never block on a prompt.
"""

from __future__ import annotations

import difflib
import os
import sys
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.provider_setup import KEYED
from gsv_cli.provider_setup import config_writes
from gsv_cli.provider_setup import default_model
from gsv_cli.provider_setup import key_path
from gsv_cli.provider_setup import ollama_running
from gsv_cli.state import CliState

BUDGET_NOTE = (
    "budget: background work (cron jobs, heartbeats) may spend up to 1 USD a day; change it "
    "with `gsv config set budget.background USD`, cap all spend with budget.daily (gsv usage "
    "shows what was spent)"
)


def onboard(
    ctx: typer.Context,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            "-p",
            help="anthropic, openai, openrouter, google, "
            "ollama or custom (an OpenAI-compatible URL).",
        ),
    ] = None,
    key_env: Annotated[
        str | None,
        typer.Option("--key-env", help="Read the API key from this environment variable."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="For custom: the OpenAI-compatible URL.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model id.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Take the defaults; never ask.")] = False,
    no_test: Annotated[bool, typer.Option("--no-test", help="Skip the live test call.")] = False,
    messenger: Annotated[
        str | None,
        typer.Option("--messenger", help="Also connect telegram, discord, slack or whatsapp."),
    ] = None,
    messenger_token_env: Annotated[
        list[str] | None,
        typer.Option(
            "--messenger-token-env",
            help="The messenger's token in this variable (slack: twice, bot token then app token).",
        ),
    ] = None,
    install_services: Annotated[
        bool | None,
        typer.Option(
            "--install-services/--no-install-services",
            help="Install the gateway and node as user services (start at login).",
        ),
    ] = None,
    ask: Annotated[bool, typer.Option("--ask", hidden=True, help="Ask without a TTY.")] = False,
) -> None:
    """Set up a model: provider, key, model, a live test call; then, if you like, a
    messenger and user services."""
    state: CliState = ctx.obj
    asking = ask or (not yes and sys.stdin.isatty())
    _ensure_gateway(ctx, state, asking, yes)
    name = provider or _ask_provider(asking)
    # tried first, saved only once the provider answered: a failed setup leaves a working
    # one as it was (models.list / models.test with `settings`, unsaved)
    base_url = base_url or _ask_base_url(name, asking)
    with output.reporting_errors():
        trial = _writes(name, base_url, _key(name, key_env, asking))
        chosen = model or _pick_model(state, name, asking, trial)
    if not no_test:
        _test(state, name, chosen, trial)
    with output.reporting_errors():
        _save(state, name, chosen, trial)
    output.write_text(f"model: {name}/{chosen}\n")
    output.print_hint(BUDGET_NOTE)
    _finish(ctx, state, asking, messenger, messenger_token_env or [], install_services)


def _finish(
    ctx: typer.Context,
    state: CliState,
    asking: bool,
    messenger: str | None,
    token_envs: list[str],
    services: bool | None,
) -> None:
    """The optional steps: a messenger, then user services (asked only when asking)."""
    from gsv_cli import onboard_finish

    chosen = messenger or (onboard_finish.ask_messenger() if asking else None)
    if chosen:
        with output.reporting_errors():
            onboard_finish.connect_messenger(state, chosen, token_envs, asking)
    if services is None:
        services = asking and typer.confirm(
            "Install the gateway and a node for this directory as user services "
            "(they start at login)?", default=False,
        )  # fmt: skip
    if services:
        onboard_finish.install_services(ctx)
    else:
        output.print_hint("next: `gsv up` opens the chat with a node for this directory")


# -- the gateway -------------------------------------------------------------------------


def _ensure_gateway(ctx: typer.Context, state: CliState, asking: bool, yes: bool) -> None:
    from gsv_cli.commands import gateway

    if gateway.probe_health(state.url()) is not None:
        return
    if not (yes or (asking and typer.confirm("No gateway answers. Start one here?", True))):
        output.fail(f"no gateway answers at {state.url()}", "Start one: gsv gateway start")
    gateway.start(ctx)


# -- provider and key --------------------------------------------------------------------


def _ask_provider(asking: bool) -> str:
    ollama = ollama_running()
    if not asking:
        if ollama:
            return "ollama"
        output.fail("no provider given", "Pass --provider (anthropic, openai, ollama, ...).")
    choices = [*KEYED, "ollama", "custom"]
    found = " (found running here)" if ollama else ""
    for number, choice in enumerate(choices, 1):
        output.write_text(f"  {number}. {choice}{found if choice == 'ollama' else ''}\n")
    default = choices.index("ollama") + 1 if ollama else 1
    while True:
        picked: int = typer.prompt("Provider (number)", default=default, type=int)
        if 1 <= picked <= len(choices):
            return choices[picked - 1]
        output.print_error(f"choose 1 to {len(choices)}")


def _key(name: str, key_env: str | None, asking: bool) -> str | None:
    if key_env:
        value = os.environ.get(key_env, "").strip()
        if not value:
            output.fail(f"the environment variable {key_env} is empty or not set")
        return value
    if name not in KEYED:
        return None
    if not asking:
        output.fail(f"{name} needs an API key", "Pass --key-env VAR (the key in $VAR).")
    typed: str = typer.prompt(f"{name} API key (hidden)", hide_input=True)
    return typed.strip() or None


def _ask_base_url(name: str, asking: bool) -> str | None:
    """The URL of a provider gsv does not know (`custom`, or a name of the owner's); a
    name close to one it knows is a typo, said with the right spelling."""
    if name in KEYED or name == "ollama":
        return None
    close = difflib.get_close_matches(name, [*KEYED, "ollama"], n=1, cutoff=0.75)
    if close:
        output.fail(
            f"unknown provider {name!r}: did you mean {close[0]}?",
            f"gsv onboard --provider {close[0]}  (or --base-url URL for your own)",
        )
    if not asking:
        return None  # _writes says --base-url is needed
    typed: str = typer.prompt(f"{name}: its OpenAI-compatible URL (e.g. http://localhost:8000/v1)")
    return typed.strip() or None


def _writes(name: str, base_url: str | None, key: str | None) -> dict[str, Any]:
    """The config writes that configure provider `name` (not made yet)."""
    if name not in KEYED and name != "ollama" and not base_url:
        output.fail(f"provider {name} needs --base-url (an OpenAI-compatible /v1 URL)")
    return dict(config_writes(name, base_url, key))


def _save(state: CliState, name: str, model: str, writes: dict[str, Any]) -> None:
    for path, value in writes.items():
        _set(state, path, value)  # the gateway keeps a key in its secret store
    if key_path(name) in writes:
        output.write_text(f"key stored for {name} (not shown)\n")
    _set(state, "model", {"provider": name, "id": model})


# -- model and test ----------------------------------------------------------------------


def _pick_model(state: CliState, name: str, asking: bool, trial: dict[str, Any]) -> str:
    from gsv_cli.runner import call_quietly
    from gsv_core.protocol.methods import MODELS_LIST

    params = {"provider": name, "settings": trial or None}
    models: list[str] = call_quietly(state, MODELS_LIST, params, timeout=60)["models"]
    if not models:
        output.fail(f"{name} offers no models", "Pass --model ID (e.g. after `ollama pull`).")
    default = default_model(models)
    if not asking:
        return default
    for model in models[:30]:
        output.write_text(f"  {model}\n")
    picked: str = typer.prompt("Model", default=default)
    return picked.strip()


def _test(state: CliState, name: str, model: str, trial: dict[str, Any]) -> None:
    from gsv_cli.runner import call_quietly
    from gsv_core.errors import GsvError
    from gsv_core.protocol.methods import MODELS_TEST

    params = {"provider": name, "model": model, "settings": trial or None}
    try:
        result = call_quietly(state, MODELS_TEST, params, 90)
    except GsvError as exc:
        output.fail(
            f"the test call failed: {exc.message}; nothing was saved (your setup is as it was)",
            f"Fix it and run onboard again (`gsv models list --provider {name}` checks).",
        )
    output.write_text(f"test call ok ({result['ms']} ms): {result['reply'][:200]}\n")


def _set(state: CliState, path: str, value: Any) -> None:
    from gsv_cli.runner import call_quietly
    from gsv_core.protocol.methods import CONFIG_SET

    call_quietly(state, CONFIG_SET, {"path": path, "value": value})
