"""`gsv local-config show|get|set|unset|path`: this machine's config.toml and secret store.

Nothing here talks to the gateway. Secret keys (gateway.token, anything named like a
token/secret/password) are read from and written to the secret store, never config.toml,
and are shown masked unless `get --reveal` asks for the value.
"""

from __future__ import annotations

import json
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app

app = plain_app(help="This machine's local config (config.toml) and secrets.", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print data as JSON (for scripts).")]
KeyArgument = Annotated[str, typer.Argument(help="Dotted key, e.g. gateway.url.")]


def render_value(value: Any) -> str:
    """Plain-text form of a config value: TOML spelling for booleans, empty for unset."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, bool) else str(value)


@app.command("show")
def show(ctx: typer.Context, json_output: JsonOption = False) -> None:
    """Show every value (secrets masked) and where it comes from."""
    from gsv_core.localconfig import load_local_config

    with output.reporting_errors():
        rows = load_local_config().describe()
    if ctx.obj.wants_json(json_output):
        output.print_json({row.key: row.value for row in rows})
        return
    table = [[row.key, render_value(row.value), row.source] for row in rows]
    output.print_table(["key", "value", "source"], table)


@app.command("get")
def get(
    ctx: typer.Context,
    key: KeyArgument,
    reveal: Annotated[bool, typer.Option("--reveal", help="Print a secret unmasked.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Print the value of KEY (secrets masked unless --reveal)."""
    from gsv_core.localconfig import find_secret
    from gsv_core.localconfig import is_secret_key
    from gsv_core.localconfig import load_local_config
    from gsv_core.localconfig import mask_secret

    with output.reporting_errors():
        if is_secret_key(key):
            found = find_secret(key)
            value = (found.value if reveal else mask_secret(found.value)) if found else None
        else:
            value = load_local_config().get(key)
    if value is None:
        output.print_error(f"{key} is not set")
        raise typer.Exit(1)
    if ctx.obj.wants_json(json_output):
        output.print_json(value)
    else:
        output.write_text(render_value(value) + "\n")


@app.command("set")
def set_(
    key: KeyArgument,
    value: Annotated[str, typer.Argument(help="The value; true/false for booleans.")],
) -> None:
    """Set KEY to VALUE; secret keys go to the keyring (or the 0600 secrets file)."""
    from gsv_core.localconfig import KNOWN_KEYS
    from gsv_core.localconfig import is_secret_key
    from gsv_core.localconfig import load_local_config
    from gsv_core.localconfig import set_secret

    with output.reporting_errors():
        if is_secret_key(key) and key in KNOWN_KEYS:
            output.write_text(set_secret(key, value) + "\n")
            return
        config = load_local_config()
        stored = config.set(key, value)
        config.save()
    output.write_text(f"set {key} = {render_value(stored)}\n")


@app.command("unset")
def unset(key: KeyArgument) -> None:
    """Remove KEY (its default applies again); for a secret, from every store."""
    from gsv_core.localconfig import delete_secret
    from gsv_core.localconfig import find_secret
    from gsv_core.localconfig import is_secret_key
    from gsv_core.localconfig import load_local_config
    from gsv_core.localconfig import secret_env_var

    with output.reporting_errors():
        if is_secret_key(key):
            removed = delete_secret(key)
            still = find_secret(key)
        else:
            config = load_local_config()
            removed = ["config"] if config.unset(key) else []
            if removed:
                config.save()
            still = None
    output.write_text(
        f"removed {key} from {', '.join(removed)}\n" if removed else f"{key} was not set\n"
    )
    if still is not None and still.source == "env":
        output.print_hint(f"note: {secret_env_var(key)} is still set in the environment")


@app.command("path")
def path(ctx: typer.Context, json_output: JsonOption = False) -> None:
    """Print where the config file (and the fallback secrets file) live."""
    from gsv_core.paths import resolve_paths

    paths = resolve_paths()
    if ctx.obj.wants_json(json_output):
        output.print_json({"config": str(paths.config_file), "secrets": str(paths.secrets_file)})
    else:
        output.write_text(f"{paths.config_file}\n")
