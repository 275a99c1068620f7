"""The one shape of a command that reads (or changes) something and shows the answer:
call the gateway, then print the result as JSON when `--json` asks for it (the command's
own or the global one), else render it for a person."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

from gsv_cli import output

if TYPE_CHECKING:
    from gsv_cli.state import CliState


def show(
    state: CliState,
    method: str,
    params: dict[str, Any] | None,
    json_flag: bool,
    render: Callable[[Any], object],
    *,
    timeout: float = 30.0,
) -> Any:
    """Call `method` and show its result (returned, for a command's exit code)."""
    from gsv_cli.runner import call

    result = call(state, method, params, timeout=timeout)
    if state.wants_json(json_flag):
        output.print_json(result)
    else:
        render(result)
    return result


def show_listing(
    state: CliState,
    method: str,
    params: dict[str, Any] | None,
    name: str,
    json_flag: bool,
    render: Callable[[list[Any]], object],
) -> list[Any]:
    """As `show`, for a listing: the result's `name` list, in JSON as every listing is
    (`{"<name>": [...], "count": n}`)."""
    from gsv_cli.runner import call

    items: list[Any] = call(state, method, params)[name]
    if state.wants_json(json_flag):
        output.print_listing(name, items)
    else:
        render(items)
    return items
