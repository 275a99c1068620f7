"""Ids by unique prefix: `gsv approvals approve 3f2a` works when one pending approval's
id starts with 3f2a; an ambiguous or unknown prefix is a clear error (exit 1)."""

from __future__ import annotations

from collections.abc import Iterable

from gsv_cli import output

SHOWN = 5  # candidates named in an ambiguity error


def resolve_prefix(given: str, ids: Iterable[str], what: str, label: str = "id") -> str:
    """The one id that is `given` or starts with it (`label` names what the ids are:
    session keys are not called ids)."""
    known = list(ids)
    if given in known:
        return given
    matches = sorted(i for i in known if i.startswith(given)) if given else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        output.fail(f"no {what} with {_article(label)} {label} starting {given!r}")
    shown = ", ".join(matches[:SHOWN]) + (" ..." if len(matches) > SHOWN else "")
    output.fail(f"{given!r} is the start of {len(matches)} {what} {label}s: {shown}",
                "Give more characters.")  # fmt: skip


def expand_prefix(given: str, ids: Iterable[str], what: str) -> str:
    """The full id when `given` starts one or more known ids (ambiguous: exit 1); an id
    nothing starts with is returned unchanged, for the gateway to say it is unknown."""
    known = list(ids)
    if given in known or not any(i.startswith(given) for i in known):
        return given
    return resolve_prefix(given, known, what)


def _article(label: str) -> str:
    return "an" if label[:1] in "aeiou" else "a"
