"""The `mcp` provider: each row calls one tool of the config's MCP servers, as promptfoo's does.

    providers:
      - id: mcp
        config:
          servers:
            - {name: files, path: ./server.py}                  # or .js (Node.js); or command + args (+ env)
            - {url: http://127.0.0.1:8000/mcp, auth: {type: bearer, token: ...}}   # Streamable HTTP
          tools: [read_file]                                     # optional allow-list; exclude_tools: [...]

The prompt (the `prompt` variable when the test has one, as promptfoo reads it) is JSON naming a
tool and its arguments: `{"tool": "read_file", "args": {"path": "a.txt"}}` (also `toolName`,
`function`, `functionName` or `name`; `arguments`, `params` or `parameters`). The output is the
tool result's content blocks as JSON text, as promptfoo records it (`[{"type":"text","text":...}]`);
a result flagged `isError` is still an output. Servers are connected through the official MCP
Python SDK (`pip install 'ci-grade[mcp]'`) once per run, on the first call, and closed at its end;
a server that cannot be reached makes each row an error naming it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_grade.config import files
from ci_grade.config.models import ProviderSpec
from ci_grade.errors import ScriptError
from ci_grade.providers.base import CallContext, Provider, ProviderResponse
from ci_grade.results.usage import TokenUsage
from ci_grade.workers import node

if TYPE_CHECKING:
    from mcp import Client

TOOL_FIELDS = ("tool", "toolName", "function", "functionName", "name")
ARGUMENT_FIELDS = ("args", "arguments", "params", "parameters")
DEFAULT_TIMEOUT_MS = 60_000
INSTALL = "pip install 'ci-grade[mcp]'"


def servers(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The configured servers (`servers`, else `server`), none when `enabled` is false."""
    if config.get("enabled") is False:
        return []
    listed = config.get("servers")
    if listed is None:
        listed = [config["server"]] if config.get("server") is not None else []
    return [server for server in listed if isinstance(server, dict)]


def check_spec(spec: ProviderSpec) -> str | None:
    """What is wrong with an `mcp` provider's servers (asked before any call), or None."""
    config = spec.config
    listed = config.get("servers", [config.get("server")] if config.get("server") is not None else [])
    if not isinstance(listed, list) or not all(isinstance(server, dict) for server in listed):
        return "config.servers must be a list of servers (each with command, path or url)"
    for index, server in enumerate(listed):
        if not any(server.get(key) for key in ("command", "path", "url")):
            return f"server {index}: either command or path or url must be specified for an MCP server"
        path = server.get("path")
        if not server.get("command") and path and not str(path).endswith((".js", ".py")):
            return f"server {index}: a local server (path) must be a .js or .py file, got {path!r}"
    return None


def node_scripts(config: Mapping[str, Any]) -> list[str]:
    """The local `.js` servers (run in Node.js)."""
    return [str(server["path"]) for server in servers(config) if not server.get("command") and str(server.get("path") or "").endswith(".js")]


def tool_call(text: str) -> tuple[str, dict[str, Any], Any] | str:
    """(tool, arguments, the parsed payload) from a prompt, or promptfoo's error for it."""
    try:
        payload = json.loads(text)
    except ValueError:
        return "Invalid JSON in prompt. MCP provider expects a JSON payload with tool call information."
    found = payload if isinstance(payload, dict) else {}
    name = next((found[key] for key in TOOL_FIELDS if found.get(key)), None)
    if not isinstance(name, str):
        return 'No tool name found in JSON payload. Expected format: {"tool": "function_name", "args": {...}}'
    arguments: Any = next((found[key] for key in ARGUMENT_FIELDS if found.get(key)), {})
    return name, arguments if isinstance(arguments, dict) else {}, payload


def auth_headers(server: Mapping[str, Any]) -> dict[str, str]:
    """The headers of a remote server: its `headers`, then those of its `auth` (bearer, basic,
    api_key in a header), as promptfoo sends them."""
    headers = {str(k): str(v) for k, v in (server.get("headers") or {}).items()}
    auth = server.get("auth") or {}
    kind = auth.get("type")
    if kind == "bearer" and auth.get("token"):
        headers["Authorization"] = f"Bearer {auth['token']}"
    elif kind == "basic":
        pair = f"{auth.get('username', '')}:{auth.get('password', '')}".encode()
        headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
    elif kind == "api_key" and (value := auth.get("value") or auth.get("api_key")) and auth.get("placement", "header") == "header":
        headers[str(auth.get("keyName") or "X-API-Key")] = str(value)
    return headers


class McpProvider(Provider):
    """Calls the tool a row's prompt names on the configured MCP servers."""

    def __init__(self, spec: ProviderSpec, env: Mapping[str, str], max_concurrency: int | None = None):
        super().__init__(spec, env, max_concurrency)
        self._tools: dict[str, Client] = {}
        self._opened: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None

    def _timeout(self) -> float:
        millis = self.spec.config.get("timeout") or self.env.get("MCP_REQUEST_TIMEOUT_MS") or DEFAULT_TIMEOUT_MS
        return float(millis) / 1000

    def _transport(self, server: Mapping[str, Any], stack: contextlib.AsyncExitStack) -> Any:
        """What the SDK's `Client` connects to: a stdio command, or a Streamable HTTP endpoint."""
        from mcp import StdioServerParameters

        base = self.base_dir or Path.cwd()
        if server.get("command"):
            command, args = str(server["command"]), [str(arg) for arg in server.get("args") or []]
        elif server.get("path"):
            path = str(files.resolve(str(server["path"]), base))
            if path.endswith(".py"):
                command = sys.executable
            elif (found := node.find()) is not None and not node.problem():
                command = found.path
            else:
                raise ScriptError(node.problem() or "no Node.js")
            args = [path]
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            client = httpx2.AsyncClient(headers=auth_headers(server), timeout=httpx2.Timeout(30, read=300))
            stack.push_async_callback(client.aclose)
            return streamable_http_client(str(server["url"]), http_client=client)
        from mcp.client.stdio import stdio_client

        env = {**self.env, **{str(k): str(v) for k, v in (server.get("env") or {}).items()}}
        # the server's own log lines go to the process's standard error, as promptfoo lets them through
        return stdio_client(StdioServerParameters(command=command, args=args, env=env, cwd=str(base)), errlog=sys.__stderr__ or sys.stderr)

    async def _hold(self, opened: asyncio.Future[None]) -> None:
        """Connect to every server and list its tools, then keep the connections open until the
        run closes this provider (the SDK closes a connection in the task that opened it)."""
        from mcp import Client

        allowed, excluded = self.spec.config.get("tools"), self.spec.config.get("exclude_tools") or []
        try:
            async with contextlib.AsyncExitStack() as stack:
                for index, server in enumerate(servers(self.spec.config)):
                    key = str(server.get("name") or server.get("url") or server.get("path") or server.get("command") or index)
                    try:
                        client = await stack.enter_async_context(Client(self._transport(server, stack), read_timeout_seconds=self._timeout()))
                        listed, cursor = [], None
                        while True:
                            page = await client.list_tools(cursor=cursor)
                            listed += [tool.name for tool in page.tools]
                            if not (cursor := page.next_cursor):
                                break
                    except Exception as exc:  # the SDK's and the transport's errors, named with the server
                        raise ScriptError(f"Failed to connect to MCP server {key}: {_reason(exc)}") from None
                    for name in listed:
                        if (allowed is None or name in allowed) and name not in excluded:
                            self._tools.setdefault(name, client)
                opened.set_result(None)
                await self._closing.wait()
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)

    async def _connected(self) -> None:
        if self._opened is None:
            self._opened = asyncio.get_running_loop().create_future()
            self._holder = asyncio.create_task(self._hold(self._opened))
        await asyncio.shield(self._opened)

    async def _call(self, prompt: str, context: CallContext) -> ProviderResponse:
        call = tool_call(str(context.vars["prompt"]) if context.vars.get("prompt") is not None else prompt)
        if isinstance(call, str):
            return ProviderResponse(error=call)
        name, arguments, payload = call
        try:
            await self._connected()
        except ImportError:
            return ProviderResponse(error=f"the mcp provider needs the MCP Python SDK: {INSTALL}")
        except ScriptError as exc:
            return ProviderResponse(error=f"MCP Provider error: {exc}")
        client = self._tools.get(name)
        if client is None:
            return ProviderResponse(error=f"MCP Provider error: Tool {name} not found in any connected MCP server")
        try:
            result = await client.call_tool(name, arguments)
        except Exception as exc:  # a protocol error, a timeout or a lost connection: this row's error
            return ProviderResponse(error=f"MCP tool error: {_reason(exc)}")
        blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
        metadata = {"toolName": name, "toolArgs": arguments, "originalPayload": payload, **({"isError": True} if result.is_error else {})}
        return ProviderResponse(output=json.dumps(blocks, ensure_ascii=False, separators=(",", ":")), metadata=metadata, token_usage=TokenUsage(), cost=0.0)

    async def aclose(self) -> None:
        self._closing.set()
        if self._holder is not None:
            await self._holder


def _reason(exc: BaseException) -> str:
    """The first underlying error of an exception group (the SDK's task groups raise them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
