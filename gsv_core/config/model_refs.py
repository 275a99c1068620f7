"""Model references in the config and session settings: `{"provider", "id"}` or the
string "provider/id", and the fallback lists made of them (`model.fallbacks`,
`agents.list[].fallbacks`, a session's `settings.fallbacks`; docs/models.md#fallbacks)."""

from __future__ import annotations

from typing import Any

MAX_FALLBACKS = 8
SHAPE = 'each fallback is {"provider": "NAME", "id": "MODEL"} or "NAME/MODEL"'
EXAMPLE = '\'[{"provider": "openai", "id": "gpt-4o-mini"}]\''


def parse_model_ref(value: Any) -> tuple[str, str] | None:
    """(provider, id) of a model reference; None when it is not one."""
    if isinstance(value, dict) and set(value) <= {"provider", "id"}:
        provider, model_id = value.get("provider"), value.get("id")
        if isinstance(provider, str) and isinstance(model_id, str):
            provider, model_id = provider.strip(), model_id.strip()
            return (provider, model_id) if provider and model_id else None
        return None
    if isinstance(value, str) and "/" in value:
        provider, _, model_id = value.strip().partition("/")
        return (provider, model_id) if provider and model_id and " " not in value else None
    return None


def check_fallbacks(value: Any, where: str) -> list[dict[str, str]]:
    """A fallback list as `{provider, id}` objects; ValueError naming the bad entry of
    `where` (its config path) and the shape it should have."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where} is a list of models, e.g. gsv config set {where} {EXAMPLE}")
    if len(value) > MAX_FALLBACKS:
        raise ValueError(f"{where} lists {len(value)} models; at most {MAX_FALLBACKS}")
    refs = []
    for index, item in enumerate(value):
        ref = parse_model_ref(item)
        if ref is None:
            raise ValueError(f"{where}[{index}] is not a model ({SHAPE}), e.g. {EXAMPLE}")
        refs.append({"provider": ref[0], "id": ref[1]})
    return refs


def fallback_list(value: Any) -> list[tuple[str, str]] | None:
    """The models of a stored fallback list; None when unset (an inner level decides)."""
    if not isinstance(value, list):
        return None
    return [ref for ref in (parse_model_ref(item) for item in value) if ref is not None]
