"""The tool router's compacted specs (gateway/tool_router.py CompactSchemas): one spec
object per registered schema, from turn to turn, so what is built from it (the tools'
JSON a provider keeps, providers/chat_request.py) is built once."""

from __future__ import annotations

from gsv_core.gateway.tool_router import CompactSchemas
from gsv_core.providers.base import ToolSpec


def schema() -> dict[str, object]:
    optional = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    return {"type": "object", "properties": {"cwd": optional}}


def one_pass(schemas: CompactSchemas, *specs: ToolSpec) -> list[ToolSpec]:
    compacted = [schemas.compact(spec) for spec in specs]
    schemas.done()
    return compacted


def test_a_schema_is_compacted_once_and_its_spec_is_the_same_object_each_pass() -> None:
    schemas = CompactSchemas()
    bash = ToolSpec("n1__Bash", "Run a command", schema())
    (first,) = one_pass(schemas, bash)
    assert first.parameters == {"type": "object", "properties": {"cwd": {"type": "string"}},
                                "required": []}  # fmt: skip
    assert first.name == "n1__Bash" and first.description == "Run a command"
    (again,) = one_pass(schemas, ToolSpec("n1__Bash", "Run a command", bash.parameters))
    assert again is first


def test_a_new_schema_object_a_new_name_or_a_pass_without_it_makes_a_new_spec() -> None:
    schemas = CompactSchemas()
    bash = ToolSpec("n1__Bash", "Run a command", schema())
    (first,) = one_pass(schemas, bash)
    (renamed,) = one_pass(schemas, ToolSpec("n2__Bash", "Run a command", bash.parameters))
    assert renamed.name == "n2__Bash" and renamed.parameters == first.parameters
    source = schema()
    (reconnected,) = one_pass(schemas, ToolSpec("n2__Bash", "Run a command", source))
    assert reconnected is not renamed and reconnected.parameters == first.parameters
    one_pass(schemas)  # the node left: its entry is dropped
    (back,) = one_pass(schemas, ToolSpec("n2__Bash", "Run a command", source))
    assert back is not reconnected and back.parameters == first.parameters
