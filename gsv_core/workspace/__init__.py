"""The agent workspace: each agent's soul, memory and skills as files it can
read and rewrite, under the gateway's data directory.

    paths.py       layout, agent ids and the path rules (no escapes)
    backend.py     StorageBackend protocol; FilesystemBackend (atomic writes, confined)
    workspace.py   Workspace: list/read/write/edit/delete, skills resolution, seeding
    excerpts.py    smart reads: line ranges, search with context, JSON paths
    templates.py   the files a new agent starts with (templates/*.md)
    prompt.py      the workspace sections of the system prompt
    fresh_prompts.py  the prompt files as last read, kept while their folders are unchanged
    folder_watch.py   which folders changed, as the kernel reports it (Linux inotify)
"""

from gsv_core.workspace.backend import FilesystemBackend
from gsv_core.workspace.backend import StorageBackend
from gsv_core.workspace.excerpts import ReadQuery
from gsv_core.workspace.workspace import Workspace

__all__ = ["FilesystemBackend", "ReadQuery", "StorageBackend", "Workspace"]
