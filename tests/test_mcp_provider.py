"""The `mcp` provider end to end: `ci-grade eval` calls tools of a stand-in MCP server (the official
SDK's) over stdio and over Streamable HTTP on loopback, as promptfoo's `mcp` provider does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli, write
from tests.servers.mcp_server import HttpMcpServer

SERVER = Path(__file__).resolve().parent / "servers" / "mcp_server.py"

TESTS = """
prompts: ['{{prompt}}']
tests:
  - vars: {prompt: '{"tool": "read_note", "args": {"name": "greeting"}}'}
    assert: [{type: contains, value: Hello from the notes server}]
  - vars: {prompt: '{"function": "add", "arguments": {"a": 2, "b": 3}}'}
    assert: [{type: equals, value: '[{"type":"text","text":"5"}]'}]
  - vars: {prompt: '{"name": "read_note", "params": {"name": "missing"}}'}
  - vars: {prompt: '{"tool": "whoami"}'}
  - vars: {prompt: '{"tool": "no_such_tool"}'}
  - vars: {prompt: 'not json'}
"""


def run(folder: Path, providers: str) -> tuple[int, list[dict[str, Any]], str]:
    write(folder / "promptfooconfig.yaml", TESTS + providers)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=folder)
    assert result.code in (0, 1), result.err
    return result.code, json.loads((folder / "out.json").read_text())["results"]["results"], result.err


def outcome(row: dict[str, Any]) -> Any:
    return row["error"] or row["response"]["output"]


def test_tools_of_a_stdio_server_are_called_with_the_prompts_json(tmp_path: Path) -> None:
    code, rows, _ = run(
        tmp_path,
        f"""
providers:
  - id: mcp
    config:
      servers:
        - name: notes
          path: {SERVER}
""",
    )
    assert code == 1
    assert [outcome(row) for row in rows] == [
        '[{"type":"text","text":"Hello from the notes server"}]',
        '[{"type":"text","text":"5"}]',
        '[{"type":"text","text":"Error executing tool read_note: Unknown note: missing"}]',
        '[{"type":"text","text":"nobody"}]',
        "MCP Provider error: Tool no_such_tool not found in any connected MCP server",
        "Invalid JSON in prompt. MCP provider expects a JSON payload with tool call information.",
    ]
    assert rows[0]["success"] and rows[1]["success"]
    assert rows[0]["response"]["metadata"]["toolName"] == "read_note"
    assert rows[1]["response"]["metadata"]["toolArgs"] == {"a": 2, "b": 3}
    assert rows[2]["response"]["metadata"]["isError"] is True


def test_a_tool_allow_list_and_a_servers_own_environment(tmp_path: Path) -> None:
    _, rows, _ = run(
        tmp_path,
        f"""
providers:
  - id: mcp
    config:
      exclude_tools: [add]
      server:
        command: {sys.executable}
        args: ['{SERVER}']
        env: {{MCP_STANDIN_USER: ada}}
""",
    )
    assert outcome(rows[1]) == "MCP Provider error: Tool add not found in any connected MCP server"
    assert outcome(rows[3]) == '[{"type":"text","text":"ada"}]'


def test_tools_of_a_streamable_http_server_are_called_with_its_auth(tmp_path: Path) -> None:
    with HttpMcpServer("Bearer mcp-token-123") as server:
        _, rows, _ = run(tmp_path, f"providers:\n  - id: mcp\n    config: {{server: {{url: '{server.url}', auth: {{type: bearer, token: mcp-token-123}}}}}}\n")
    assert [outcome(row) for row in rows[:2]] == ['[{"type":"text","text":"Hello from the notes server"}]', '[{"type":"text","text":"5"}]']
    assert server.requests and all(path == "/mcp" and auth == "Bearer mcp-token-123" for _, path, auth in server.requests)
    assert {method for method, _, _ in server.requests} >= {"POST"}


def test_a_server_that_refuses_the_connection_makes_each_row_an_error_naming_it(tmp_path: Path) -> None:
    with HttpMcpServer("Bearer right") as server:
        code, rows, _ = run(tmp_path, f"providers:\n  - id: mcp\n    config: {{servers: [{{name: remote, url: '{server.url}', headers: {{Authorization: Bearer wrong}}}}]}}\n")
    assert code == 1
    assert server.requests and server.requests[0][2] == "Bearer wrong"
    assert all(row["error"].startswith("MCP Provider error: Failed to connect to MCP server remote: ") for row in rows[:5])


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ("[{name: x}]", "server 0: either command or path or url must be specified for an MCP server"),
        ("[{path: server.rb}]", "server 0: a local server (path) must be a .js or .py file, got 'server.rb'"),
    ],
)
def test_a_malformed_server_is_refused_before_any_call(tmp_path: Path, servers: str, message: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['{{{{prompt}}}}']\nproviders:\n  - id: mcp\n    config: {{servers: {servers}}}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert f"provider 'mcp': {message}" in result.err
    assert "providers[0].config" in result.err


def test_a_javascript_server_is_checked_by_node_before_any_call(tmp_path: Path) -> None:
    write(tmp_path / "server.js", "import { Server } from '@modelcontextprotocol/sdk/server/index.js';\nconst server = new Server(;\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{prompt}}']\nproviders:\n  - id: mcp\n    config: {server: {path: server.js}}\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "providers[0]: provider 'mcp': server.js: SyntaxError" in result.err and "(server.js:2)" in result.err
