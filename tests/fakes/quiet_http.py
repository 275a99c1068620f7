"""The test fakes' HTTP server: the stdlib `ThreadingHTTPServer`, quiet about clients
that go away.

A client that drops a kept-alive connection (an SDK closing its pool, a gateway shutting
down mid-stream) resets it while the handler waits for the next request line or writes an
answer. The stdlib prints a traceback for that on stderr, which showed in CI's log as if
something had failed; it is a client leaving, not a failure. Anything else is still
printed.
"""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any

GONE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class QuietHTTPServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], GONE):
            return
        super().handle_error(request, client_address)
