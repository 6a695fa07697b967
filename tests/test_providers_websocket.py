"""`ws://` and `wss://` providers end to end: `ci-grade eval` on promptfoo's two WebSocket examples
against a stand-in server, with headers, subprotocols, transforms, retries and refusals."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows
from tests.servers.ws_server import WsServer

TESTS = """\
    tests:
      - vars: {language: French, body: Hello world}
      - vars: {language: Pirate, body: "I'm hungry"}"""

STREAM = """|-
              (accumulator, event, context) => {
                const { message, type } = JSON.parse(event.data);
                if(type === "message"){return [{output: message},true]}
                if(type === "error"){return [{error: message},true]}
                return [{output: message}, false];}"""


@pytest.fixture
def server() -> Iterator[WsServer]:
    with WsServer() as srv:
        yield srv


def test_the_websockets_example_runs_end_to_end(tmp_path: Path, server: WsServer) -> None:
    code, rows = eval_rows(tmp_path, f"""
    prompts:
      - 'Rephrase this in {{{{language}}}}: {{{{body}}}}'
      - 'Translate this to conversational {{{{language}}}}: {{{{body}}}}'
    providers:
      - id: '{server.url}'
        config:
          messageTemplate: '{{"prompt": {{{{prompt | dump}}}}, "model": {{{{model | dump}}}}}}'
          transformResponse: 'data.output'
    defaultTest:
      vars: {{model: tiny-1}}
      assert: [{{type: starts-with, value: 'Processed: '}}]
{TESTS}
    """)
    assert code == 0
    assert [row["response"]["output"] for row in rows] == [
        "Processed: Rephrase this in French: Hello world", "Processed: Translate this to conversational French: Hello world",
        "Processed: Rephrase this in Pirate: I'm hungry", "Processed: Translate this to conversational Pirate: I'm hungry",
    ]
    sent = sorted((json.loads(m) for shake in server.handshakes for m in shake.messages), key=lambda m: m["prompt"])
    assert len(server.handshakes) == 4 and sent[0] == {"prompt": "Rephrase this in French: Hello world", "model": "tiny-1"}


def test_the_streaming_example_reads_deltas_until_the_whole_message(tmp_path: Path, server: WsServer) -> None:
    code, rows = eval_rows(tmp_path, f"""
    prompts: ['Rephrase this in {{{{language}}}}: {{{{body}}}}']
    targets:
      - id: '{server.url}/ws-stream'
        config:
          messageTemplate: '{{"input": {{{{prompt | dump}}}}}}'
          streamResponse: {STREAM}
{TESTS}
    """)
    assert code == 0 and [row["error"] for row in rows] == [None, None]
    assert [row["response"]["output"] for row in rows] == ["Echo: Rephrase this in French: Hello world", "Echo: Rephrase this in Pirate: I'm hungry"]
    assert all(shake.path == "/ws-stream" for shake in server.handshakes)
    assert sorted(json.loads(m)["input"] for shake in server.handshakes for m in shake.messages)[0] == "Rephrase this in French: Hello world"


def test_a_stream_error_and_a_reply_without_output_are_row_errors(tmp_path: Path, server: WsServer) -> None:
    code, rows = eval_rows(tmp_path, f"""
    prompts: ['{{{{body}}}}']
    providers:
      - id: '{server.url}/ws-stream'
        label: stream
        config:
          messageTemplate: '{{"input": ""}}'
          streamResponse: {STREAM}
      - id: '{server.url}'
        label: plain
        config:
          messageTemplate: '{{"prompt": {{{{prompt | dump}}}}, "model": {{{{model | dump}}}}}}'
          transformResponse: 'data.output'
    tests:
      - vars: {{body: hi}}
    """)
    assert code == 1
    assert rows[0]["error"] == 'Missing "input" (non-empty string) in payload'
    # as in promptfoo, an undefined var dumps to nothing: the message is not JSON and the server says so
    assert ['{"prompt": "hi", "model": }'] in [shake.messages for shake in server.handshakes]
    assert rows[1]["error"] == "transformResponse returned nothing (check the expression against the reply)"


def test_headers_subprotocols_and_a_templated_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WS_CHAT_TOKEN", "ws-token-5521")
    with WsServer(token="ws-token-5521", subprotocols=["chat.v2"]) as server:
        port = server.url.rsplit(":", 1)[1]
        code, rows = eval_rows(tmp_path, f"""
        prompts: ['{{{{q}}}}']
        providers:
          - id: 'ws://127.0.0.1:{port}'
            config:
              url: 'ws://127.0.0.1:{port}/?lang={{{{lang}}}}'
              headers: {{Authorization: 'Bearer {{{{ env.WS_CHAT_TOKEN }}}}'}}
              protocols: 'chat.v1, chat.v2'
              messageTemplate: '{{"prompt": {{{{prompt | dump}}}}}}'
              transformResponse: '(data) => data.output.toUpperCase()'
        tests:
          - vars: {{q: hello, lang: fr}}
        """)
        assert code == 0 and rows[0]["response"]["output"] == "PROCESSED: HELLO"
        (shake,) = server.handshakes
        assert shake.path == "/?lang=fr" and shake.subprotocol == "chat.v2"
        assert shake.headers["Sec-WebSocket-Protocol"] == "chat.v1, chat.v2"
        assert "ws-token-5521" not in (tmp_path / "out.json").read_text()
        monkeypatch.setenv("WS_CHAT_TOKEN", "wrong-token-1")
        code, rows = eval_rows(tmp_path, (tmp_path / "promptfooconfig.yaml").read_text())
        assert rows[0]["error"] == "WebSocket connection failed (HTTP 401)" and server.refused == [401]


def test_file_transforms_and_an_error_result(tmp_path: Path, server: WsServer) -> None:
    write(tmp_path / "shape.py", """
    def parse(data):
        return {"output": data["output"][::-1], "tokenUsage": {"total": 7, "prompt": 3, "completion": 4}}
    """)
    write(tmp_path / "shape.js", "module.exports = (data) => ({error: 'model said no: ' + data.model});\n")
    message = '{"prompt": {{prompt | dump}}, "model": "m"}'
    python = call({"id": server.url, "config": {"messageTemplate": message, "transformResponse": "file://shape.py:parse"}}, "abc", base_dir=tmp_path)
    assert python.error is None and python.output == "cba :dessecorP" and python.token_usage.total == 7
    js = call({"id": server.url, "config": {"messageTemplate": message, "transformResponse": "file://shape.js"}}, "abc", base_dir=tmp_path)
    assert js.error == "model said no: m" and js.output is None
    plain = call({"id": server.url, "config": {"messageTemplate": message}}, "abc")
    assert plain.output == {"output": "Processed: abc", "model": "m"}


def test_wss_trusts_the_ca_named_by_ssl_cert_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    spec = {"messageTemplate": '{"prompt": {{prompt | dump}}}', "transformResponse": "data.output"}
    with WsServer(tls=context) as server:
        assert server.url.startswith("wss://")
        untrusted = call({"id": server.url, "config": spec}, "secure")
        assert untrusted.error is not None and "TLS certificate was refused" in untrusted.error and server.handshakes == []
        ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
        assert call({"id": server.url, "config": spec}, "secure").output == "Processed: secure"


def test_a_busy_handshake_is_tried_again(server: WsServer) -> None:
    server.busy = 1
    response = call({"id": server.url, "config": {"messageTemplate": '{"prompt": "x"}', "transformResponse": "data.output"}})
    assert response.error is None and response.output == "Processed: x"
    assert server.refused == [429] and len(server.handshakes) == 1


def test_a_refused_connection_and_a_slow_reply_are_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    refused = call({"id": f"ws://127.0.0.1:{closed}", "config": {"messageTemplate": "{{prompt}}"}})
    assert refused.error is not None and refused.error.startswith("WebSocket connection failed: ") and "gave up after 1 attempt" in refused.error
    with WsServer(delay=1.0) as slow:
        late = call({"id": slow.url, "config": {"messageTemplate": '{"prompt": "x"}', "timeoutMs": 100}})
    assert late.error == "WebSocket request timed out after 0.1s (gave up after 1 attempt)"


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ("{transformResponse: data.output}", "config.messageTemplate is required"),
        ("{messageTemplate: '{{ prompt'}", "config.messageTemplate:"),
        ("{messageTemplate: x, timeoutMs: soon}", "config.timeoutMs must be a positive number of milliseconds"),
        ("{messageTemplate: x, protocols: {a: 1}}", "config.protocols must be a subprotocol name or a list of them"),
    ],
)
def test_bad_settings_exit_2_before_any_call(tmp_path: Path, server: WsServer, config: str, problem: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", f"""
    prompts: ['{{{{q}}}}']
    providers:
      - id: '{server.url}'
        config: {config}
    tests:
      - vars: {{q: hi}}
    """)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and problem in result.err and "promptfooconfig.yaml:" in result.err
    assert server.handshakes == []
