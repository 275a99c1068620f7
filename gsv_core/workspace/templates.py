"""The files a new agent's workspace starts with (`templates/*.md`, shipped as package
data). BOOTSTRAP.md drives the first-run commissioning and is deleted by the agent when
it is done; HEARTBEAT.md holds only a heading and comments, so heartbeats stay off until
the user or the agent adds a task."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

from gsv_core.workspace.prompt import INSTRUCTION_FILES

TEMPLATE_FILES = INSTRUCTION_FILES  # every instruction file starts from its template


@functools.cache
def workspace_templates() -> Mapping[str, str]:
    """File name -> text of every template (read once)."""
    folder = resources.files("gsv_core.workspace").joinpath("templates")
    texts = {name: folder.joinpath(name).read_text(encoding="utf-8") for name in TEMPLATE_FILES}
    return MappingProxyType(texts)
