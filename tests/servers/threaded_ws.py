"""A websockets server on 127.0.0.1 served from a background thread, the base of the stand-ins for
streaming model APIs (`live_server`, `realtime_server`): `with Server(...) as server: server.port`."""

from __future__ import annotations

import abc
import asyncio
import ssl
import threading
from typing import Self

from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response


class ThreadedWsServer(abc.ABC):
    """Subclasses answer the opening handshake (`_handshake`: a refusal, or None to accept) and
    run each accepted connection (`_session`)."""

    def __init__(self, tls: ssl.SSLContext | None = None):
        self.tls = tls
        self.refused: list[str] = []
        """Why handshakes or sessions were refused, in order."""
        self.overloaded: list[int] = []
        """Statuses (429, 503, ...) the next handshakes are refused with, in order, with `Retry-After: 0`."""
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Future[None] | None = None

    def __enter__(self) -> Self:
        ready = threading.Event()

        async def main() -> None:
            self._stop = self._loop.create_future()
            async with serve(self._session, "127.0.0.1", 0, ssl=self.tls, process_request=self._handshake) as server:
                self.port = next(iter(server.sockets)).getsockname()[1]
                ready.set()
                await self._stop

        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),), daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set_result, None)
        if self._thread is not None:
            self._thread.join(10)

    def refuse_if_overloaded(self, body: bytes) -> Response | None:
        """The next queued overload status as the handshake's answer (None when none is queued)."""
        if not self.overloaded:
            return None
        status = self.overloaded.pop(0)
        self.refused.append(f"status {status}")
        return Response(status, "Overloaded", Headers([("Retry-After", "0"), ("Content-Type", "text/plain")]), body)

    @abc.abstractmethod
    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None: ...

    @abc.abstractmethod
    async def _session(self, ws: ServerConnection) -> None: ...
