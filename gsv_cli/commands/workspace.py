"""`gsv workspace ...`: the agent's workspace files (its soul, memory and skills).

    ls [PATH] | cat PATH | put PATH [FILE|-] | rm PATH | edit PATH     (all take --agent ID)

Paths are relative to the agent's workspace root; `skills/...` shows the agent's own copy
of a skill, else the global one. `edit` opens $VISUAL / $EDITOR on a temporary copy and
writes it back only when it changed (and refuses if the file changed meanwhile).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from pathlib import PurePosixPath
from typing import Annotated
from typing import Any

import typer

from gsv_cli import output
from gsv_cli.apps import plain_app
from gsv_cli.options import AgentOpt
from gsv_cli.options import JsonOpt
from gsv_cli.options import agent_params
from gsv_cli.reads import show
from gsv_cli.state import CliState

app = plain_app(help="Read and change the agent's workspace files.", no_args_is_help=True)

PathArg = Annotated[str, typer.Argument(help="Path in the workspace, e.g. SOUL.md or memory/.")]


def _params(path: str, agent: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "path": path,
        **{k: v for k, v in extra.items() if v is not None},
        **agent_params(agent),
    }


def _print_listing(result: dict[str, Any]) -> None:
    entries = [*result["directories"], *result["files"]]
    output.write_text("".join(f"{entry}\n" for entry in entries) if entries else "(empty)\n")


@app.command("ls")
def ls(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="Folder to list (default: the root).")] = "",
    agent: AgentOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """List a workspace folder: folders (ending in /) first, then files."""
    from gsv_core.protocol.methods import WORKSPACE_LIST

    show(ctx.obj, WORKSPACE_LIST, _params(path, agent), json_output, _print_listing)


@app.command("cat")
def cat(
    ctx: typer.Context,
    path: PathArg,
    agent: AgentOpt = None,
    start_line: Annotated[int | None, typer.Option("--start-line", min=1)] = None,
    end_line: Annotated[int | None, typer.Option("--end-line", min=1)] = None,
    search: Annotated[
        str | None, typer.Option("--search", "-s", help="Only lines containing this text.")
    ] = None,
    context_lines: Annotated[int | None, typer.Option("--context", "-C", min=0)] = None,
    json_path: Annotated[str | None, typer.Option("--json-path", help="e.g. a.b[0]")] = None,
    json_output: JsonOpt = False,
) -> None:
    """Print a workspace file (or part of it); a folder is listed."""
    from gsv_core.protocol.methods import WORKSPACE_READ

    extra = {"startLine": start_line, "endLine": end_line, "search": search,
             "contextLines": context_lines, "jsonPath": json_path}  # fmt: skip
    whole = all(value is None for value in extra.values())
    params = _params(path, agent, **extra)
    show(ctx.obj, WORKSPACE_READ, params, json_output, lambda r: _print_read(r, search, whole))


def _print_read(result: dict[str, Any], search: str | None, whole: bool) -> None:
    """A folder's listing, or the file's text (a part of it ends with a line break)."""
    if "content" not in result:
        _print_listing(result)
    elif search is not None and not result.get("matches"):
        output.print_hint(f"no lines of {result['path']} contain {search!r}")
    else:
        text = result["content"]
        output.write_content(text if whole or text.endswith("\n") else text + "\n")


@app.command("put")
def put(
    ctx: typer.Context,
    path: PathArg,
    source: Annotated[
        str | None, typer.Argument(metavar="[FILE|-]", help="Local file (default: stdin).")
    ] = None,
    agent: AgentOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Write a workspace file from a local file or stdin (replacing it)."""
    from gsv_core.protocol.methods import WORKSPACE_WRITE

    params = _params(path, agent, content=_read_source(source))
    show(ctx.obj, WORKSPACE_WRITE, params, json_output, _print_written)


def _print_written(result: dict[str, Any]) -> None:
    output.write_text(f"wrote {result['path']} ({result['size']} bytes)\n")


def _read_source(source: str | None) -> str:
    if source is None or source == "-":
        if sys.stdin.isatty():
            output.print_hint("reading the content from stdin (end with Ctrl-D)")
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        output.fail(f"{source} is not UTF-8 text; the workspace holds text files")
    except OSError as exc:
        output.fail(f"cannot read {source}: {exc.strerror or exc}")


@app.command("rm")
def rm(
    ctx: typer.Context, path: PathArg, agent: AgentOpt = None, json_output: JsonOpt = False
) -> None:
    """Delete a workspace file."""
    from gsv_core.protocol.methods import WORKSPACE_DELETE

    show(ctx.obj, WORKSPACE_DELETE, _params(path, agent), json_output, _print_deleted)


def _print_deleted(result: dict[str, Any]) -> None:
    output.write_text(f"deleted {result['path']}\n")


@app.command("edit")
def edit(ctx: typer.Context, path: PathArg, agent: AgentOpt = None) -> None:
    """Edit a workspace file in $VISUAL or $EDITOR (a missing file starts empty)."""
    original = _fetch(ctx.obj, path, agent)
    edited = _run_editor(original or "", path)
    if edited == (original or ""):
        output.print_hint(f"no changes: {path} left as it was")
        return
    result = _save(ctx.obj, path, agent, original, edited)
    if result is None:
        kept = _keep_copy(edited, path)
        output.fail(
            f"{path} changed on the gateway while you were editing; your version was not "
            f"saved. It is in {kept}."
        )
    _print_written(result)


def _fetch(state: CliState, path: str, agent: str | None) -> str | None:
    """The file's text, None when it does not exist yet."""
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.errors import NotFound
    from gsv_core.protocol.methods import WORKSPACE_READ

    async def fetch() -> Any:
        async with gateway_client(state) as client:
            try:
                return await client.call(WORKSPACE_READ, _params(path, agent))
            except NotFound:
                return None

    result = run(fetch)
    if result is not None and "content" not in result:
        output.fail(f"{path} is a folder; give a file path")
    return None if result is None else str(result["content"])


def _save(
    state: CliState, path: str, agent: str | None, original: str | None, edited: str
) -> dict[str, Any] | None:
    """Write the edited text, unless the file changed since it was fetched (None)."""
    from gsv_cli.runner import gateway_client
    from gsv_cli.runner import run
    from gsv_core.errors import NotFound
    from gsv_core.protocol.methods import WORKSPACE_READ
    from gsv_core.protocol.methods import WORKSPACE_WRITE

    async def save() -> Any:
        async with gateway_client(state) as client:
            try:
                current = (await client.call(WORKSPACE_READ, _params(path, agent)))["content"]
            except NotFound:
                current = None
            if current != original:
                return None
            return await client.call(WORKSPACE_WRITE, _params(path, agent, content=edited))

    result: dict[str, Any] | None = run(save)
    return result


def _suffix(path: str) -> str:
    """The file's extension for the temp copy (editors pick syntax by it), if plain."""
    suffix = PurePosixPath(path).suffix
    return suffix if re.fullmatch(r"\.[A-Za-z0-9]{1,10}", suffix) else ".txt"


def _run_editor(text: str, path: str) -> str:
    import shlex
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="gsv-edit-") as folder:
        copy = Path(folder) / f"workspace{_suffix(path)}"
        with open(copy, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        try:
            status = subprocess.call([*shlex.split(editor), str(copy)])
        except OSError as exc:
            output.fail(f"cannot start the editor {editor!r}: {exc.strerror or exc}",
                        hint="Set $EDITOR (or $VISUAL) to your editor command.")  # fmt: skip
        if status != 0:
            output.fail(f"the editor exited with status {status}; {path} left as it was")
        try:
            with open(copy, encoding="utf-8", newline="") as handle:
                return handle.read()
        except UnicodeDecodeError:
            output.fail(f"the edited file is not UTF-8 text; {path} left as it was")


def _keep_copy(text: str, path: str) -> str:
    import tempfile

    fd, kept = tempfile.mkstemp(prefix="gsv-edit-", suffix=_suffix(path))
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return kept
