"""Keeping platform tokens out of logs and error messages.

A bot token is part of every Bot API URL (Telegram) or of the identify payload (Discord),
so the libraries may log it. A `TokenRedactor` is a logging filter that masks every token
it was given in the records of the loggers it is attached to, and the adapters build their
error messages through `failure_reason` so a library exception never carries one out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from collections.abc import Iterable

REASON_LIMIT = 200  # characters of an exception's text kept in a status or an error


class TokenRedactor(logging.Filter):
    """Masks the registered secrets in log records (message and traceback)."""

    def __init__(self, placeholder: str = "<bot-token>") -> None:
        super().__init__()
        self._placeholder = placeholder
        self._secrets: set[str] = set()

    def protect(self, secret: str, loggers: Iterable[str]) -> None:
        """Mask `secret` from now on in the records of `loggers`."""
        self._secrets.add(secret)
        for name in loggers:
            logging.getLogger(name).addFilter(self)  # idempotent

    def mask(self, text: str) -> str:
        """`text` with every registered secret replaced."""
        for secret in tuple(self._secrets):
            text = text.replace(secret, self._placeholder)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record is logging's problem, not a leak
        masked = self.mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.mask(logging.Formatter().formatException(record.exc_info))
        return True


def failure_reason(exc: BaseException, mask: Callable[[str], str]) -> str:
    """A short, masked reason for a failure, fit for a status line or an error."""
    text = mask(str(exc)).strip() or type(exc).__name__
    return text[:REASON_LIMIT]


def mask_secrets(text: str, secrets: Iterable[str], placeholder: str = "***") -> str:
    """`text` with each of an account's few known secrets replaced (Slack, WhatsApp)."""
    for secret in secrets:
        text = text.replace(secret, placeholder)
    return text
