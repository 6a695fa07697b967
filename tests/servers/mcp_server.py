"""A stand-in MCP server on the official SDK's `MCPServer`, with a few tools.

Run as a script it serves MCP over stdio (what `path: mcp_server.py` or `command:` starts);
`HttpMcpServer` serves it over Streamable HTTP on a loopback port (uvicorn in a thread), refusing
requests without the expected `Authorization` header (401) and recording each request's method,
path and auth header.

Tools: `read_note(name)` (a text block, or an `isError` result for an unknown note),
`add(a, b)` (a number), `whoami()` (the server's `MCP_STANDIN_USER` variable).
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

NOTES = {"greeting": "Hello from the notes server", "secret": "Permission denied: secret notes are private"}

server = MCPServer("ci-grade stand-in")


@server.tool()
def read_note(name: str) -> str:
    """Read a note by name."""
    if name not in NOTES:
        raise ToolError(f"Unknown note: {name}")
    return NOTES[name]


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def whoami() -> str:
    """The user this server runs as (its environment's MCP_STANDIN_USER)."""
    return os.environ.get("MCP_STANDIN_USER", "nobody")


class HttpMcpServer:
    """The server over Streamable HTTP at `url` (`/mcp`), requiring `Authorization: <auth>`."""

    def __init__(self, auth: str) -> None:
        self.auth = auth
        self.requests: list[tuple[str, str, str | None]] = []
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/mcp"
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> HttpMcpServer:
        import uvicorn

        app = server.streamable_http_app()

        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                self.requests.append((scope["method"], scope["path"], headers.get("authorization")))
                if headers.get("authorization") != self.auth:
                    await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"application/json")]})
                    await send({"type": "http.response.body", "body": b'{"error": "unauthorized"}'})
                    return
            await app(scope, receive, send)

        self._server = uvicorn.Server(uvicorn.Config(guarded, log_level="warning", lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the MCP stand-in did not start")
            threading.Event().wait(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._socket.close()


if __name__ == "__main__":
    server.run()
