"""A refused config value in words a person reads: the key, what it expects, an example.

pydantic's own words name its types (`constrained-float`, "a valid dictionary or instance
of ModelConfig"); these say `budget.daily expects a number or false, e.g. gsv config set
budget.daily 5`. The errors of one value (a union tries each type) become one sentence.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

# pydantic's names for the types it tried, in an error's location: not config keys
_TYPE_TAG = re.compile(
    r"[\[(]|^(constrained|function|lax|strict|json|is-instance|chain|nullable|union|"
    r"tagged-union|definition-ref|model-fields)\b|^(bool|int|float|str|none)$"
)
# the CLI's own settings, which live in `gsv local-config` (gsv_core/localconfig.py)
_LOCAL_ONLY = {
    "gateway.port": "the port is `gsv gateway start --port N` (or `gsv up --port N`)",
    "gateway.host": "the address is `gsv gateway start --host H`",
    "gateway.url": "the CLI's gateway URL is `gsv local-config set gateway.url URL`",
    "gateway.token": "the CLI's token is `gsv local-config set gateway.token T`",
}
_NUMBER_ERRORS = ("greater_than_equal", "less_than_equal", "greater_than", "less_than")


def field_of(err: Mapping[str, Any]) -> str:
    """The dotted config key of an error, without pydantic's type tags."""
    parts = [str(p) for p in err["loc"] if isinstance(p, int) or not _TYPE_TAG.search(str(p))]
    return ".".join(parts)


def explain(
    errors: Sequence[Mapping[str, Any]], root: type[BaseModel], prefix: str = ""
) -> tuple[str, str]:
    """(the key, one sentence) for the first refused value among pydantic's `errors` of
    model `root`, whose keys are shown under `prefix` (`agents.list[0].heartbeat.`)."""
    inner = field_of(errors[0])
    same = [e for e in errors if field_of(e) == inner]
    kinds = [e["type"] for e in same]
    field = prefix + inner
    if "extra_forbidden" in kinds:
        return field, _unknown(inner, root, prefix)
    if "value_error" in kinds:  # our own validators' words, without pydantic's prefix
        return field, str(next(e for e in same if e["type"] == "value_error")["ctx"]["error"])
    if any(k in ("model_type", "dict_type", "model_attributes_type") for k in kinds):
        return field, _section(inner, root, prefix)
    expects = [w for w in (_expects(e) for e in same) if w]
    if not expects:
        return field, str(same[0]["msg"])
    wanted = " or ".join(dict.fromkeys(w for w, _ in expects))
    example = next(x for _, x in expects if x)
    return field, f"{field} expects {wanted}, e.g. `gsv config set {field} {example}`"


def _expects(err: Mapping[str, Any]) -> tuple[str, str] | None:
    """What one alternative wants, and an example of it."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind.startswith(("float", "int", "decimal")) or kind in _NUMBER_ERRORS:
        bounds = _bounds(kind, ctx)
        if kind.startswith("int"):  # "5s" or 2.5 for timeoutMs: say it takes no unit
            return f"a whole number{bounds}", str(ctx.get("ge", ctx.get("gt", 5)))
        return f"a number{bounds}", str(ctx.get("ge", ctx.get("gt", 5)))
    if kind.startswith("bool"):
        return "true or false", "true"
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'|\b(True|False|None)\b", str(ctx.get("expected", "")))
        words = [a or b.lower() for a, b in options]
        if not words:
            return None
        return (words[0] if len(words) == 1 else "one of " + ", ".join(words)), words[0]
    if kind.startswith("string") or kind == "str_type":
        return "text", '"..."'
    if kind.startswith("list"):
        return "a list", '\'["a", "b"]\''
    return None


def _bounds(kind: str, ctx: dict[str, Any]) -> str:
    words = {"ge": "at least", "gt": "above", "le": "at most", "lt": "below"}
    said = [f"{words[k]} {ctx[k]}" for k in ("ge", "gt", "le", "lt") if k in ctx]
    return f" ({', '.join(said)})" if said else ""


def _unknown(inner: str, root: type[BaseModel], prefix: str) -> str:
    parent, _, leaf = inner.rpartition(".")
    field = prefix + inner
    if field in _LOCAL_ONLY:
        return f"{field} is not a gateway config key: {_LOCAL_ONLY[field]}"
    keys = _keys_at(parent, root)
    if not keys:
        return f"{field} is not a config key"
    close = difflib.get_close_matches(leaf, keys, n=1)
    at = prefix + parent if parent else prefix.rstrip(".")
    guess = f"did you mean {'.'.join(filter(None, (at, close[0])))}? " if close else ""
    return (
        f"{field} is not a config key: {guess}keys at {at or 'the top'}: {', '.join(sorted(keys))}"
    )


def _section(inner: str, root: type[BaseModel], prefix: str) -> str:
    field = prefix + inner
    keys = sorted(_keys_at(inner, root))
    if not keys:
        return f"{field} is a section, not a single value: give it as JSON"
    return (
        f"{field} is a section, not a single value: set one of its keys, e.g. "
        f"`gsv config set {field}.{'id' if 'id' in keys else keys[0]} VALUE` "
        f"(keys: {', '.join(keys)}), or the whole section as JSON"
    )


def _keys_at(path: str, root: type[BaseModel]) -> list[str]:
    """The keys a section of the config model has (its fields), or [] when `path` is not a
    section the model knows."""
    model: Any = root
    named = False  # the part before was a `dict[str, Model]`: this part is a name in it
    for part in filter(None, path.split(".")):
        if named:
            named = False
            continue
        field = model.model_fields.get(part) if _is_model(model) else None
        if field is None:
            return []
        model = _model_in(field.annotation)
        if model is None:
            return []
        named = getattr(field.annotation, "__origin__", None) is dict  # e.g. providers
    return list(model.model_fields) if _is_model(model) and not named else []


def _is_model(candidate: Any) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, BaseModel)


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (`X`, `X | None`), if any."""
    if _is_model(annotation):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if _is_model(arg):
            return arg
    return None
