"""Logging for gsv's foreground processes (`gsv gateway run`, later `gsv node run`).

gsv_core only logs through `logging.getLogger(__name__)`; this module is the one place
handlers are attached: stderr (the terminal, or the journal under systemd) and a size-rotated
file under the log directory.
"""

from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

from gsv_cli.safe_text import neutralise
from gsv_core.fsmodes import create_private_file

LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"
MAX_BYTES = 10 * 1024 * 1024
BACKUP_COUNT = 5
_HANDLER_NAMES = ("gsv.stderr", "gsv.file")
# `log.error(..., extra=FILE_ONLY)`: for a failure the command also reports on stderr itself
FILE_ONLY = {"file_only": True}


def configure_logging(
    log_file: Path | None,
    *,
    level: str = "info",
    stderr: bool = True,
    max_bytes: int = MAX_BYTES,
    backups: int = BACKUP_COUNT,
) -> None:
    """Send log records to stderr (unless `stderr` is false) and to `log_file`, rotated at
    `max_bytes` keeping `backups` old files. Calling it again replaces the handlers."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() in _HANDLER_NAMES:
            root.removeHandler(handler)
            handler.close()
    formatter = NeutralisingFormatter(LOG_FORMAT, DATE_FORMAT)
    handlers: list[logging.Handler] = []
    if stderr:
        console = _named(logging.StreamHandler(sys.stderr), "gsv.stderr")
        console.addFilter(lambda record: not getattr(record, "file_only", False))
        handlers.append(console)
    if log_file is not None:
        create_private_file(log_file)  # the handler appends to it, so it stays 0600
        rotating = RotatingFileHandler(
            log_file, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        rotating.rotator = _rotate_private
        handlers.append(_named(rotating, "gsv.file"))
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level.upper())
    # websockets logs every connection and every plain HTTP answer (/health) at INFO
    logging.getLogger("websockets").setLevel(logging.WARNING)


class NeutralisingFormatter(logging.Formatter):
    """Records quote remote text (a sender's name, a tool's output) and are read on a
    terminal (stderr, `tail -f`): its control characters are shown, never obeyed, and a
    lone surrogate cannot break the write."""

    def format(self, record: logging.LogRecord) -> str:
        return neutralise(super().format(record))


def _rotate_private(source: str, dest: str) -> None:
    """Rotation that leaves a fresh 0600 file behind: the handler would create it with
    the umask's mode (logs can quote secrets a user typed by mistake)."""
    os.rename(source, dest)
    create_private_file(Path(source))


def _named(handler: logging.Handler, name: str) -> logging.Handler:
    handler.set_name(name)
    return handler


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """An integer setting from the environment (e.g. GSV_NODE_LOG_MAX_BYTES); bad -> default."""
    try:
        return max(minimum, int(os.environ.get(name, "")))
    except ValueError:
        return default
