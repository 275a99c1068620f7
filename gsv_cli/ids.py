"""Ids by unique prefix: `gsv approvals approve 3f2a` works when one pending approval's
id starts with 3f2a; an ambiguous or unknown prefix is a clear error (exit 1)."""

from __future__ import annotations

from collections.abc import Iterable

from gsv_cli import output

SHOWN = 5  # candidates named in an ambiguity error


def resolve_prefix(given: str, ids: Iterable[str], what: str) -> str:
    """The one id that is `given` or starts with it."""
    known = list(ids)
    if given in known:
        return given
    matches = [i for i in known if i.startswith(given)] if given else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        output.fail(f"no {what} with an id starting {given!r}")
    shown = ", ".join(matches[:SHOWN]) + (" ..." if len(matches) > SHOWN else "")
    output.fail(f"{given!r} is the start of {len(matches)} {what} ids: {shown}",
                "Give more characters.")  # fmt: skip
