"""A stand-in WebSocket chat server on loopback, as promptfoo's WebSocket examples run one, on
`websockets`' asyncio server in a background thread (`wss://` with a server-side `tls` context).

- `/` (the `websockets` example's server): each message must be JSON with a `prompt` text (and
  may name a `model`); the reply is one JSON message `{"output": "Processed: <prompt>", "model": ...}`,
  or `{"error": "Invalid JSON"}` for a message that is not JSON.
- `/ws-stream` (the `websockets-streaming` example's): `{"type": "ready"}` on connecting, then for
  each `{"input": <text>}` one `{"type": "delta", "message": <word>}` per word, the whole answer
  as `{"type": "message", "message": ...}` and `{"type": "done"}`; a message without a non-empty
  `input` text gets `{"type": "error", "message": ...}`.

The handshake is checked as a real service would: a `token` set means the `Authorization` header
must be `Bearer <token>` (401 otherwise), unknown paths get 404, `subprotocols` are negotiated,
and `busy` answers the next handshakes 429 with `Retry-After: 0`. Every handshake (path,
headers, subprotocol) and message received is recorded.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response


@dataclass
class Handshake:
    path: str
    headers: dict[str, str]
    subprotocol: str | None = None
    messages: list[str] = field(default_factory=list)


class WsServer:
    """`with WsServer() as server:` serves on `server.url` until the block ends."""

    def __init__(self, token: str | None = None, subprotocols: list[str] | None = None, delay: float = 0.0, tls: ssl.SSLContext | None = None):
        self.token = token
        self.tls = tls
        self.subprotocols = subprotocols
        self.delay = delay
        self.busy = 0
        self.handshakes: list[Handshake] = []
        self.refused: list[int] = []
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="ws-server", daemon=True)

    @property
    def url(self) -> str:
        assert self._server is not None
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"{'wss' if self.tls else 'ws'}://127.0.0.1:{port}"

    def __enter__(self) -> WsServer:
        self._thread.start()
        kwargs: dict[str, Any] = {"process_request": self._check}
        if self.subprotocols:
            kwargs["subprotocols"] = self.subprotocols
        if self.tls:
            kwargs["ssl"] = self.tls

        async def start() -> Server:
            return await serve(self._serve, "127.0.0.1", 0, **kwargs)

        self._server = asyncio.run_coroutine_threadsafe(start(), self._loop).result(5)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        if self.busy > 0:
            self.busy -= 1
            self.refused.append(429)
            return Response(429, "Too Many Requests", Headers({"Retry-After": "0", "Content-Length": "0"}), b"")
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            self.refused.append(401)
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid token\n")
        if request.path.split("?")[0] not in ("/", "/ws-stream"):
            self.refused.append(404)
            return connection.respond(HTTPStatus.NOT_FOUND, "no such endpoint\n")
        return None

    async def _serve(self, connection: ServerConnection) -> None:
        request = connection.request
        assert request is not None
        shake = Handshake(request.path, dict(request.headers.raw_items()), connection.subprotocol)
        self.handshakes.append(shake)
        streaming = request.path.startswith("/ws-stream")
        if streaming:
            await connection.send(json.dumps({"type": "ready", "message": "Connected to /ws-stream"}))
        async for raw in connection:
            text = raw if isinstance(raw, str) else raw.decode()
            shake.messages.append(text)
            await asyncio.sleep(self.delay)
            await (self._stream(connection, text) if streaming else self._answer(connection, text))

    async def _answer(self, connection: ServerConnection, text: str) -> None:
        try:
            data = json.loads(text)
        except ValueError:
            await connection.send(json.dumps({"error": "Invalid JSON"}))
            return
        if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
            await connection.send(json.dumps({"error": "prompt must be a string"}))
            return
        await connection.send(json.dumps({"output": f"Processed: {data['prompt']}", "model": data.get("model") or "default"}))

    async def _stream(self, connection: ServerConnection, text: str) -> None:
        try:
            data = json.loads(text)
        except ValueError:
            await connection.send(json.dumps({"type": "error", "message": "Invalid JSON payload"}))
            return
        words = str(data.get("input") or "").split() if isinstance(data, dict) and isinstance(data.get("input"), str) else []
        if not words:
            await connection.send(json.dumps({"type": "error", "message": 'Missing "input" (non-empty string) in payload'}))
            return
        answer = f"Echo: {' '.join(words)}"
        for word in answer.split():
            await connection.send(json.dumps({"type": "delta", "message": word + " "}))
        await connection.send(json.dumps({"type": "message", "message": answer}))
        await connection.send(json.dumps({"type": "done"}))
