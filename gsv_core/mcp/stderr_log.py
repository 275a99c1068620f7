"""A stdio server's stderr, line by line, into the gateway log.

The SDK hands the child a real file for stderr; this is the write end of a pipe whose
read end a thread drains (a chatty server never blocks on a full pipe)."""

from __future__ import annotations

import logging
import os
import threading
from typing import TextIO

log = logging.getLogger("gsv_core.mcp.server")
MAX_LINE_CHARS = 2000


def stderr_to_log(server: str) -> TextIO:
    """The file to give the child; close it once the child is gone (the thread ends at
    end of file, when every writer has closed it)."""
    read_fd, write_fd = os.pipe()
    thread = threading.Thread(
        target=_drain, args=(server, read_fd), name=f"mcp-stderr-{server}", daemon=True
    )
    thread.start()
    return os.fdopen(write_fd, "w")


def _drain(server: str, read_fd: int) -> None:
    with os.fdopen(read_fd, encoding="utf-8", errors="replace") as pipe:
        for line in pipe:
            # %r: the server's text is logged as data, control characters escaped
            log.info("mcp server %s stderr: %r", server, line.rstrip("\n")[:MAX_LINE_CHARS])
