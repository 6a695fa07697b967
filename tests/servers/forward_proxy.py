"""A loopback forward proxy that records what it forwarded: plain HTTP requests in absolute form
(`POST http://host:port/path`), forwarded to the origin and answered with its reply, and HTTPS
tunnels (`CONNECT host:port`), piped both ways. Enough of a company proxy to show that a client
routes through `HTTP_PROXY` / `HTTPS_PROXY` and skips it for what `NO_PROXY` names.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from urllib.parse import urlsplit


class ForwardProxy:
    """Start with `start()` or as a context manager; `forwarded` lists `METHOD target` in order."""

    def __init__(self) -> None:
        self.forwarded: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None, "proxy not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> ForwardProxy:
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="forward-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        server = self._server
        if server is None:
            return

        async def shutdown() -> None:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._loop.close()
        self._server = None

    def __enter__(self) -> ForwardProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
                self.forwarded.append(f"{method} {target}")
                if method == "CONNECT":
                    host, port = target.rsplit(":", 1)
                    upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
                    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    await writer.drain()
                    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
                    return
                await self._forward(head, method, target, version, reader, writer)
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _forward(self, head: bytes, method: str, target: str, version: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One plain request: to the origin in origin form, its reply back as it came."""
        headers = head.split(b"\r\n")[1:-2]
        body = await reader.readexactly(_length(headers))
        url = urlsplit(target)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        upstream_reader, upstream_writer = await asyncio.open_connection(url.hostname, url.port or 80)
        kept = [line for line in headers if not line.lower().startswith((b"proxy-", b"connection:"))]
        upstream_writer.write(b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *kept, b"Connection: close", b"", b""]) + body)
        await upstream_writer.drain()
        reply_head = await upstream_reader.readuntil(b"\r\n\r\n")
        reply_body = await upstream_reader.readexactly(_length(reply_head.split(b"\r\n")[1:-2]))
        upstream_writer.close()
        writer.write(reply_head + reply_body)
        await writer.drain()


def _length(header_lines: list[bytes]) -> int:
    for line in header_lines:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()
