"""The Gemini Live API (`google:live:`) through google-genai's live sessions against a loopback
`BidiGenerateContent` stand-in over TLS."""

from __future__ import annotations

import base64
import io
import json
import socket
import ssl
import textwrap
import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows
from tests.servers.counting_server import CountingServer
from tests.servers.google_server import ServiceAccount
from tests.servers.live_server import BAD_KEY, CLOSE, LiveServer, Session, Vertex, echo, text_turn

KEY = "AIza-live-secret-4242"
MODEL = "gemini-2.0-flash-exp"
TEXT = {"generationConfig": {"response_modalities": ["text"]}, "timeoutMs": 5000}


@pytest.fixture(scope="session")
def live_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def live(live_ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., LiveServer]]:
    """Starts stand-ins (`live(reply=..., model=...)`) that the process reaches through
    GOOGLE_API_BASE_URL with GOOGLE_API_KEY, trusting their certificate through SSL_CERT_FILE."""
    bundle = tmp_path / "live-ca.pem"
    live_ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    live_ca.issue_cert("127.0.0.1").configure_cert(context)
    servers: list[LiveServer] = []

    def start(reply: Any = echo, model: str = MODEL) -> LiveServer:
        server = LiveServer(KEY, model, context, reply).__enter__()
        servers.append(server)
        monkeypatch.setenv("GOOGLE_API_BASE_URL", server.url)
        return server

    yield start
    for server in servers:
        server.__exit__()


def test_each_user_message_is_a_turn_and_the_setup_carries_the_options(live: Callable[..., LiveServer]) -> None:
    server = live()
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "why is the sea salty?"}, {"role": "user", "content": "shorter"}])
    config = {**TEXT, "temperature": 0.3, "generationConfig": {"response_modalities": ["text"], "topK": 5, "stopSequences": ["END"]}}
    response = call({"id": f"google:live:{MODEL}", "config": config}, prompt)
    assert response.error is None
    assert response.output == {"text": "echo: why is the sea salty?echo: shorter", "toolCall": {"functionCalls": []}}
    (session,) = server.sessions
    assert session.setup["model"] == f"models/{MODEL}"
    assert session.setup["generationConfig"]["responseModalities"] == ["TEXT"]
    assert session.setup["generationConfig"]["temperature"] == 0.3 and session.setup["generationConfig"]["topK"] == 5
    assert session.setup["generationConfig"]["stopSequences"] == ["END"]
    assert session.setup["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert session.turns == ["why is the sea salty?", "shorter"]
    assert all(m["clientContent"]["turnComplete"] is True for m in session.messages)
    assert response.token_usage.num_requests == 2 and response.token_usage.total == response.token_usage.prompt + response.token_usage.completion > 0


def test_tools_in_promptfoos_snake_case_reach_the_setup_in_the_apis_camel_case(live: Callable[..., LiveServer]) -> None:
    server = live()
    function = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    config = {**TEXT, "tools": [{"google_search": {}}, {"code_execution": {}}, function]}
    assert call({"id": f"google:live:{MODEL}", "config": config}, "hi").error is None
    (session,) = server.sessions
    tools = session.setup["tools"]
    assert {"googleSearch": {}} in tools and {"codeExecution": {}} in tools and len(tools) == 3
    assert [t["functionDeclarations"][0]["name"] for t in tools if "functionDeclarations" in t] == ["get_weather"]


def test_a_wrong_key_a_wrong_endpoint_an_unknown_option_and_silence_are_row_errors(live: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch) -> None:
    server = live(reply=lambda session, message: [])
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-wrong")
    refused = call({"id": f"google:live:{MODEL}", "config": TEXT}, "hi")
    assert refused.error == f"Google Live API error 1007: {BAD_KEY}" and server.refused == ["key"]
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    lost = call({"id": f"google:live:{MODEL}", "config": {**TEXT, "apiVersion": "v9"}}, "hi")
    assert lost.error == f"WebSocket error for model {MODEL}: HTTP 404 at the handshake"
    unknown = call({"id": f"google:live:{MODEL}", "config": {"generationConfig": {"colour": "blue"}}}, "hi")
    assert unknown.error == f"generationConfig.colour is not an option of the Live API (google:live:{MODEL})"
    silent = call({"id": f"google:live:{MODEL}", "config": {**TEXT, "timeoutMs": 300}}, "hi")
    assert silent.error == "WebSocket request timed out after 300ms of inactivity"
    assert [s.turns for s in server.sessions] == [["hi"]]
    monkeypatch.delenv("GOOGLE_API_KEY")
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in str(call(f"google:live:{MODEL}", "hi").error)


def adding(session: Session, message: dict[str, Any]) -> list[dict[str, Any]]:
    """Calls addNumbers and describe (closing the call with a bare turnComplete, as the service
    does), then reports the tool responses."""
    if "toolResponse" in message:
        answers = {r["name"]: r["response"] for r in message["toolResponse"]["functionResponses"]}
        return text_turn(f"The sum is {answers['addNumbers']['sum']}; {answers['describe']['result']}", session)
    calls = [{"id": "c1", "name": "addNumbers", "args": {"a": 5, "b": 6}}, {"id": "c2", "name": "describe", "args": {"n": 11}}]
    return [{"toolCall": {"functionCalls": calls}}, {"serverContent": {"turnComplete": True}}]


def test_function_calls_are_answered_by_javascript_and_python_callbacks(live: Callable[..., LiveServer], tmp_path: Path) -> None:
    server = live(reply=adding)
    write(tmp_path / "tools.py", "import json\ndef describe(args):\n    return f\"eleven is {json.loads(args)['n']}\"\n")
    tools = [{"functionDeclarations": [{"name": "addNumbers", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "NUMBER"}, "b": {"type": "NUMBER"}}}}, {"name": "describe"}]}, {"codeExecution": {}}]
    callbacks = {"addNumbers": "(args) => { const { a, b } = JSON.parse(args); return { sum: a + b }; }", "describe": "file://tools.py:describe"}
    response = call({"id": f"google:live:{MODEL}", "config": {**TEXT, "tools": tools, "functionToolCallbacks": callbacks}}, "add 5 and 6", base_dir=tmp_path)
    assert response.error is None
    assert response.output["text"] == "The sum is 11; eleven is 11"
    assert [c["name"] for c in response.output["toolCall"]["functionCalls"]] == ["addNumbers", "describe"]
    (session,) = server.sessions
    tools_sent = {key: value for tool in session.setup["tools"] for key, value in tool.items()}
    assert tools_sent["functionDeclarations"][0]["name"] == "addNumbers" and tools_sent["codeExecution"] == {}
    (tool_message,) = [m for m in session.messages if "toolResponse" in m]
    assert tool_message["toolResponse"]["functionResponses"][0] == {"id": "c1", "name": "addNumbers", "response": {"sum": 11}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


COUNTER_API = """
import http.server, json, sys
counter = 3
class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, body, status=200):
        self.send_response(status); self.send_header("Content-Type", "application/json"); self.end_headers()
        self.wfile.write(json.dumps(body).encode())
    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ("/get_count", "/get_state"): return self.reply({"counter": counter})
        self.reply({"error": "method"}, 405)
    def do_POST(self):
        global counter
        if self.path == "/add_one":
            counter += 1
            return self.reply({})
        self.reply({}, 404)
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else PORT), Handler).serve_forever()
"""


def counting(session: Session, message: dict[str, Any]) -> list[dict[str, Any]]:
    """Adds one until the API's count (read back with get_count) is 5."""
    responses = (message.get("toolResponse") or {}).get("functionResponses") or []
    if responses and responses[0]["name"] == "get_count" and responses[0]["response"]["counter"] >= 5:
        return text_turn("The counter is 5.", session)
    step = len(session.messages)
    name = "get_count" if responses and responses[0]["name"] == "add_one" else "add_one"
    return [{"toolCall": {"functionCalls": [{"id": f"s{step}", "name": name}]}}]


def test_a_stateful_api_script_serves_the_calls_and_its_final_state_is_in_the_output(live: Callable[..., LiveServer], tmp_path: Path) -> None:
    server = live(reply=counting)
    port = free_port()
    write(tmp_path / "counter_api.py", COUNTER_API.replace("PORT", str(port)))
    api = {"file": "file://counter_api.py", "url": f"http://127.0.0.1:{port}"}
    response = call({"id": f"google:live:{MODEL}", "config": {**TEXT, "functionToolStatefulApi": api}}, "Add to the counter until it reaches 5", base_dir=tmp_path)
    assert response.error is None
    assert response.output["statefulApiState"] == {"counter": 5}
    assert [c["name"] for c in response.output["toolCall"]["functionCalls"]] == ["add_one", "get_count", "add_one", "get_count"]
    assert response.output["text"] == "The counter is 5."
    with pytest.raises(OSError):  # the script was stopped with the session
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert len(server.sessions) == 1


def test_spoken_answers_come_with_their_transcript_and_a_wav_file(live: Callable[..., LiveServer]) -> None:
    server = live(model="gemini-2.0-flash-live-001")
    config = {
        "generationConfig": {"response_modalities": ["audio"], "outputAudioTranscription": {}},
        "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Charon"}}},
    }
    response = call({"id": "google:live:gemini-2.0-flash-live-001", "config": config}, "How you doin'?")
    assert response.error is None
    assert response.output["text"] == "echo: How you doin'?"
    assert response.audio is not None and response.audio["format"] == "wav" and response.audio["transcript"] == "echo: How you doin'?"
    with wave.open(io.BytesIO(base64.b64decode(response.audio["data"]))) as audio:
        assert (audio.getnchannels(), audio.getsampwidth(), audio.getframerate()) == (1, 2, 24000)
        assert audio.readframes(audio.getnframes()) == b"".join(piece.encode() * 4 for piece in ("echo: How ", "you doin'?"))
    setup = server.sessions[0].setup
    assert setup["generationConfig"]["responseModalities"] == ["AUDIO"]
    assert setup["generationConfig"]["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]["voiceName"] == "Charon"
    assert setup["outputAudioTranscription"] == {}


def test_native_audio_models_take_text_as_realtime_input_and_answer_with_a_transcript(live: Callable[..., LiveServer]) -> None:
    model = "gemini-2.5-flash-native-audio-preview-09-2025"
    server = live(model=model)
    response = call({"id": f"google:live:{model}", "config": TEXT}, "hello")
    assert response.error is None and response.output["text"] == "echo: hello"
    (session,) = server.sessions
    assert session.setup["generationConfig"]["responseModalities"] == ["AUDIO"] and session.setup["outputAudioTranscription"] == {}
    assert session.messages == [{"realtimeInput": {"text": "hello"}}]


def test_eval_runs_live_configs_with_tool_call_assertions_audio_checks_and_an_error_row(live: Callable[..., LiveServer], tmp_path: Path) -> None:
    def reply(session: Session, message: dict[str, Any]) -> list[dict[str, Any]]:
        text = session.turns[-1] if session.turns else ""
        if "weather" in text and "toolResponse" not in message:
            city: Any = 42 if "42" in text else "San Francisco"
            return [{"toolCall": {"functionCalls": [{"id": "w1", "name": "get_weather", "args": {"city": city}}]}}]
        if "toolResponse" in message:
            return text_turn("It is sunny.", session)
        if "boom" in text:
            return [{CLOSE: (1011, "Internal error encountered.")}]
        return text_turn("Salt comes from weathering of rocks.", session)

    live(reply=reply)
    write(tmp_path / "tools.json", json.dumps([{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}, {"googleSearch": {}}]))
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{query}}}}']
        providers:
          - id: google:live:{MODEL}
            config:
              tools: file://tools.json
              generationConfig: {{response_modalities: [text]}}
              timeoutMs: 3000
        tests:
          - vars: {{query: What is the weather in San Francisco?}}
            assert:
              - type: is-valid-function-call
              - type: equals
                value: get_weather
                transform: output.toolCall.functionCalls[0].name
              - type: equals
                value: San Francisco
                transform: output.toolCall.functionCalls[0].args.city
          - vars: {{query: why is the sea salty}}
            assert:
              - {{type: icontains, value: weathering, transform: output.text}}
              - type: not-is-valid-function-call
          - vars: {{query: What is the weather in 42?}}
            assert: [{{type: is-valid-function-call}}]
          - vars: {{query: boom}}
            assert: [{{type: icontains, value: salt, transform: output.text}}]
        """,
    )
    assert code == 1
    assert [r["success"] for r in rows] == [True, True, False, False]
    assert rows[2]["gradingResult"]["componentResults"][0]["reason"].startswith("Call to 'get_weather' does not match its schema: $.city: 42 is not of type 'string'")
    assert rows[0]["response"]["output"]["toolCall"]["functionCalls"] == [{"id": "w1", "name": "get_weather", "args": {"city": "San Francisco"}}]
    assert rows[1]["response"]["output"]["text"] == "Salt comes from weathering of rocks." and rows[1]["response"]["tokenUsage"]["total"] > 0
    assert rows[3]["error"] == "Google Live API error 1011: Internal error encountered."
    assert KEY not in (tmp_path / "out.json").read_text()


def test_eval_checks_a_spoken_answer_in_javascript(live: Callable[..., LiveServer], tmp_path: Path) -> None:
    live(model="gemini-2.0-flash-live-001")
    code, rows = eval_rows(
        tmp_path,
        """
        prompts: ['{{question}}']
        providers:
          - id: google:live:gemini-2.0-flash-live-001
            config:
              generationConfig: {response_modalities: [audio], outputAudioTranscription: {}}
              speechConfig: {voiceConfig: {prebuiltVoiceConfig: {voiceName: Charon}}}
        tests:
          - vars: {question: "How are you? Doing well?"}
            assert:
              - {type: contains, value: well}
              - type: javascript
                value: |
                  return Boolean(
                    context.providerResponse?.audio?.data &&
                    context.providerResponse?.audio?.transcript?.length > 0
                  );
        """,
    )
    assert code == 0 and rows[0]["success"] is True


def test_preflight_refuses_a_missing_stateful_api_script_and_a_live_id_without_model(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", textwrap.dedent(f"""
        prompts: ['{{{{query}}}}']
        providers:
          - id: google:live:{MODEL}
            config:
              functionToolStatefulApi:
                file: file://examples/google-live/counter_api.py
                url: http://127.0.0.1:8765
        tests: [{{vars: {{query: hi}}}}]
        """))
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "providers[0].config.functionToolStatefulApi.file" in result.err and "counter_api.py" in result.err and "promptfooconfig.yaml:6" in result.err
    write(tmp_path / "promptfooconfig.yaml", "prompts: [hi]\nproviders: ['google:live:']\ntests: [{vars: {a: 1}}]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "name a model" in result.err


def test_vertex_live_uses_the_service_account_and_answers_in_audio_with_a_transcript(live_ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "live-ca.pem"
    live_ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    live_ca.issue_cert("127.0.0.1").configure_cert(context)
    for name in ("VERTEX_PROJECT_ID", "GOOGLE_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "VERTEX_REGION", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    model = "gemini-live-2.5-flash"
    with CountingServer() as tokens:
        account = ServiceAccount.write(tmp_path, tokens)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(account.path))
        with LiveServer("", model, context, vertex=Vertex(account.project, "us-central1", account.tokens)) as server:
            monkeypatch.setenv("VERTEX_API_HOST", server.url)
            response = call({"id": f"vertex:live:{model}", "config": TEXT}, "hello vertex")
            assert response.error is None, response.error
            assert response.output["text"] == "echo: hello vertex" and response.audio is not None
            (session,) = server.sessions
            assert session.setup["model"] == f"projects/{account.project}/locations/us-central1/publishers/google/models/{model}"
            assert session.setup["generationConfig"]["responseModalities"] == ["AUDIO"] and session.setup["outputAudioTranscription"] == {}
            assert session.turns == ["hello vertex"] and account.tokens
            wrong = call({"id": f"vertex:live:{model}", "config": {**TEXT, "apiVersion": "v2"}}, "hi")
            assert wrong.error == "Vertex Live apiVersion must be v1 or v1beta1."
            code, rows = eval_rows(tmp_path, f"""
                prompts: ['{{{{q}}}}']
                providers: ['vertex:live:{model}']
                tests: [{{vars: {{q: sea salt}}, assert: [{{type: icontains, value: SALT, transform: output.text}}]}}]
                """)
            assert code == 0 and rows[0]["response"]["output"]["text"] == "echo: sea salt"


def test_an_overloaded_service_is_retried_before_the_first_turn(live: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch) -> None:
    server = live()
    server.overloaded = [503, 429]
    response = call({"id": f"google:live:{MODEL}", "config": TEXT}, "again")
    assert response.error is None and response.output["text"] == "echo: again"
    assert server.refused == ["status 503", "status 429"] and len(server.sessions) == 1
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "1")
    server.overloaded = [503, 503]
    failed = call({"id": f"google:live:{MODEL}", "config": TEXT}, "again")
    assert failed.error is not None and "HTTP 503 at the handshake" in failed.error and "gave up after" in failed.error


def test_a_grounded_answer_carries_its_grounding_metadata(live: Callable[..., LiveServer]) -> None:
    grounding = {"webSearchQueries": ["sea salt"], "groundingChunks": [{"web": {"uri": "https://example.com/salt", "title": "Salt"}}]}

    def grounded(session: Session, message: dict[str, Any]) -> list[dict[str, Any]]:
        turn = text_turn(f"echo: {session.turns[-1]}", session)
        return [*turn[:-1], {"serverContent": {"groundingMetadata": grounding}}, turn[-1]]

    live(reply=grounded)
    response = call({"id": f"google:live:{MODEL}", "config": TEXT}, "why is the sea salty?")
    assert response.error is None and response.metadata["groundingMetadata"]["webSearchQueries"] == ["sea salt"]
    live()
    assert "groundingMetadata" not in call({"id": f"google:live:{MODEL}", "config": TEXT}, "again").metadata


def test_vertex_live_refuses_a_region_that_is_not_a_location_id_before_connecting() -> None:
    response = call({"id": f"vertex:live:{MODEL}", "config": {"region": "us central1", "projectId": "ci-project"}}, "hi")
    assert response.error == "Vertex Live region must be a Google Cloud location ID."
