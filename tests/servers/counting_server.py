"""An LLMServer that also counts the TCP connections it accepts (to see client reuse on the wire).

It polls for shutdown every 20 ms, so stopping it does not add half a second to each test.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

from tests.servers.llm_server import LLMServer, _make_handler


class _CountingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.accepted = 0
        self._count_lock = threading.Lock()

    def process_request(self, request, client_address):  # type: ignore[no-untyped-def]
        with self._count_lock:
            self.accepted += 1
        super().process_request(request, client_address)


class CountingServer(LLMServer):
    """`connections` is how many TCP connections clients have opened so far."""

    def start(self, port: int = 0) -> CountingServer:
        self._server = _CountingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="counting-server", daemon=True)
        self._thread.start()
        return self

    @property
    def connections(self) -> int:
        assert isinstance(self._server, _CountingHTTPServer), "server not started"
        return self._server.accepted
