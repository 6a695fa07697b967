"""`openai:realtime:<model>` through the OpenAI SDK's realtime client against a loopback stand-in
of the Realtime API's websocket."""

from __future__ import annotations

import base64
import io
import json
import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.errors import UnknownProviderError
from ci_grade.providers.base import CallContext
from ci_grade.providers.openai_realtime_reply import usage_cost
from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows, make, use
from tests.servers.realtime_server import SILENT, RealtimeServer, Session, call_response, echo, text_response

KEY = "sk-realtime-secret-7788"
MODEL = "gpt-4o-realtime-preview-2024-12-17"
TEXT = {"modalities": ["text"], "websocketTimeout": 5000}
CHAT = json.dumps([{"role": "user", "content": [{"type": "text", "text": "why is the sea salty?"}]}])


@pytest.fixture
def realtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., RealtimeServer]]:
    """Starts stand-ins (`realtime(reply=..., model=...)`) that the process reaches through
    OPENAI_BASE_URL with OPENAI_API_KEY."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0")
    servers: list[RealtimeServer] = []

    def start(reply: Any = echo, model: str = MODEL) -> RealtimeServer:
        server = RealtimeServer(KEY, model, reply).__enter__()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        return server

    yield start
    for server in servers:
        server.__exit__()


def test_a_chat_array_prompt_sends_its_last_user_message_and_reads_the_text_answer(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()
    config = {**TEXT, "instructions": "Be brief.", "temperature": 0.7, "max_response_output_tokens": 200, "headers": {"X-Team": "evals"}}
    response = call({"id": f"openai:realtime:{MODEL}", "config": config}, CHAT)
    assert response.error is None and response.output == "echo: why is the sea salty?"
    (session,) = server.sessions
    assert session.headers["authorization"] == f"Bearer {KEY}" and session.headers["x-team"] == "evals"
    assert session.settings["type"] == "realtime" and session.settings["model"] == MODEL
    assert session.settings["output_modalities"] == ["text"] and session.settings["instructions"] == "Be brief."
    assert session.settings["max_output_tokens"] == 200 and "temperature" not in session.settings
    assert session.settings["audio"] == {"input": {"format": {"type": "audio/pcm", "rate": 24000}}, "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy"}}
    kinds = [event["type"] for event in session.events]
    assert kinds == ["session.update", "conversation.item.create", "response.create"]
    assert session.events[1]["item"] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "why is the sea salty?"}]}
    assert session.events[2]["response"]["output_modalities"] == ["text"]
    usage = response.token_usage
    assert (usage.prompt, usage.total, usage.num_requests) == (10, 10 + usage.completion, 1) and usage.completion > 0
    assert response.cost == pytest.approx(10 * 5e-06 + usage.completion * 2e-05)
    assert response.metadata["responseId"].startswith("resp_") and response.metadata["messageId"].startswith("item_")


def test_plain_text_and_a_prompt_object_go_as_input_text(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()
    assert call({"id": f"openai:realtime:{MODEL}", "config": TEXT}, "plain words").output == "echo: plain words"
    assert call({"id": f"openai:realtime:{MODEL}", "config": TEXT}, '{"prompt": "from an object"}').output == "echo: from an object"
    assert [s.turns for s in server.sessions] == [["plain words"], ["from an object"]]


def test_audio_answers_come_as_their_transcript_with_the_audio_as_a_wav_file(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()
    response = call({"id": f"openai:realtime:{MODEL}", "config": {"voice": "cedar", "websocketTimeout": 5000}}, "say hi")
    assert response.error is None and response.output == "echo: say hi"
    (session,) = server.sessions
    assert session.settings["output_modalities"] == ["audio"] and session.settings["audio"]["output"]["voice"] == "cedar"
    assert response.audio is not None and response.audio["format"] == "wav" and response.audio["transcript"] == "echo: say hi"
    with wave.open(io.BytesIO(base64.b64decode(response.audio["data"]))) as audio:
        assert (audio.getframerate(), audio.getnchannels(), audio.getsampwidth()) == (24000, 1, 2)
        assert audio.readframes(audio.getnframes()) == b"echo: echo: say hisay hi"  # the two deltas' PCM, in order


def test_function_calls_are_answered_by_the_handler_and_the_model_answers_again(realtime: Callable[..., RealtimeServer]) -> None:
    def weather(session: Session, event: dict[str, Any]) -> list[dict[str, Any]]:
        return call_response("get_weather", {"location": "Paris"}) if not session.outputs else echo(session, event)

    server = realtime(reply=weather)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}]
    handler = "(name, args) => JSON.stringify({name, city: JSON.parse(args).location, temperature: 21})"
    response = call({"id": f"openai:realtime:{MODEL}", "config": {**TEXT, "tools": tools, "functionCallHandler": handler}}, "weather?")
    assert response.error is None
    answer = '{"name":"get_weather","city":"Paris","temperature":21}'
    assert response.output == f"tool said: {answer}\n\n[Function calls were made during processing]"
    assert response.metadata["functionCallOccurred"] is True and response.metadata["functionCallResults"] == [answer]
    (session,) = server.sessions
    assert session.settings["tools"] == [{"type": "function", "name": "get_weather", "parameters": tools[0]["function"]["parameters"]}]
    assert session.settings["tool_choice"] == "auto" and session.outputs == [answer]
    assert [e["type"] for e in session.events][-2:] == ["conversation.item.create", "response.create"] and "response" not in session.events[-1]
    assert response.token_usage.num_requests == 2


def test_a_handler_that_fails_answers_a_redacted_error_and_one_without_handler_is_an_error(realtime: Callable[..., RealtimeServer], tmp_path: Path) -> None:
    server = realtime(reply=lambda s, e: call_response("get_weather", {"location": "Oslo"}) if not s.outputs else echo(s, e))
    write(tmp_path / "handler.js", "module.exports.handle = async (name, args) => { throw new Error('disk /secret/path full'); };\n")
    failing = {**TEXT, "tools": [{"type": "function", "name": "get_weather"}], "functionCallHandler": "file://handler.js:handle"}
    response = call({"id": f"openai:realtime:{MODEL}", "config": failing}, "weather?", base_dir=tmp_path)
    assert response.output == 'tool said: {"error":"Tool execution failed"}\n\n[Function calls were made during processing]'
    assert server.sessions[0].outputs == ['{"error":"Tool execution failed"}']
    unanswered = call({"id": f"openai:realtime:{MODEL}", "config": {**TEXT, "tools": [{"type": "function", "name": "get_weather"}]}}, "weather?")
    assert unanswered.error == ("OpenAI Realtime returned an empty response. A function_call was emitted by the model but no "
                                "functionCallHandler was configured to respond. Attempted: get_weather.")
    assert unanswered.metadata["attemptedFunctionCalls"] == [{"name": "get_weather"}]


def test_tool_rounds_stop_at_max_tool_iterations(realtime: Callable[..., RealtimeServer]) -> None:
    realtime(reply=lambda s, e: call_response("again", {}))
    config = {**TEXT, "tools": [{"type": "function", "name": "again"}], "functionCallHandler": "() => 'more'", "maxToolIterations": 2}
    response = call({"id": f"openai:realtime:{MODEL}", "config": config}, "loop")
    assert response.error is not None and "exceeded maxToolIterations=2" in response.error
    assert response.metadata == {"functionCallOccurred": True, "functionCallResults": ["more", "more"]}


def test_an_error_event_is_the_calls_error(realtime: Callable[..., RealtimeServer]) -> None:
    realtime()
    response = call({"id": f"openai:realtime:{MODEL}", "config": {**TEXT, "voice": "robot"}}, "hi")
    assert response.output is None and response.error == "WebSocket error: invalid_request_error: Invalid 'session.audio.output'."


def test_a_server_that_never_answers_times_out(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime(reply=lambda s, e: [{SILENT: True}])
    response = call({"id": f"openai:realtime:{MODEL}", "config": {**TEXT, "websocketTimeout": 300}}, "hello?")
    assert response.error == "WebSocket error: WebSocket connection timed out after 300ms"
    assert len(server.sessions) == 1  # not retried: the session had started


def test_a_closed_socket_is_an_error(realtime: Callable[..., RealtimeServer]) -> None:
    realtime(reply=lambda s, e: [{"close": (1011, "server error")}])
    response = call({"id": f"openai:realtime:{MODEL}", "config": TEXT}, "hi")
    assert response.error is not None and response.error.startswith("WebSocket error: WebSocket closed unexpectedly with code 1011: server error.")


def test_a_refused_key_is_not_retried_and_an_overloaded_handshake_is(realtime: Callable[..., RealtimeServer], monkeypatch: pytest.MonkeyPatch) -> None:
    server = realtime()
    refused = call({"id": f"openai:realtime:{MODEL}", "config": {**TEXT, "apiKey": "sk-wrong"}}, "hi")
    assert refused.error == "WebSocket error: Unexpected server response: 401" and server.refused == ["key"]
    server.overloaded = [503, 429]
    assert call({"id": f"openai:realtime:{MODEL}", "config": TEXT}, "again").output == "echo: again"
    assert server.refused == ["key", "status 503", "status 429"] and len(server.sessions) == 1
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "1")
    server.overloaded = [503, 503]
    failed = call({"id": f"openai:realtime:{MODEL}", "config": TEXT}, "again")
    assert failed.error == "WebSocket error: Unexpected server response: 503 (gave up after 2 attempts)"


def test_turns_of_one_conversation_share_a_session_and_others_get_their_own(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()

    async def run(provider: Any) -> list[Any]:
        first = await provider.call("where is Kyoto?", CallContext(conversation_id="japan"))
        second = await provider.call("and in autumn?", CallContext(conversation_id="japan"))
        other = await provider.call("unrelated", CallContext(conversation_id="tech"))
        alone = await provider.call("no conversation")
        return [first.output, second.output, other.output, alone.output]

    outputs = use({"id": f"openai:realtime:{MODEL}", "config": TEXT}, run)
    assert outputs == ["echo: where is Kyoto?", "echo: and in autumn?", "echo: unrelated", "echo: no conversation"]
    assert [s.turns for s in server.sessions] == [["where is Kyoto?", "and in autumn?"], ["unrelated"], ["no conversation"]]
    japan = server.sessions[0]
    creates = [e for e in japan.events if e["type"] == "conversation.item.create"]
    assert creates[0]["previous_item_id"] is None and creates[1]["previous_item_id"] == japan.items[1]  # after the assistant's answer
    single = use({"id": f"openai:realtime:{MODEL}", "config": {**TEXT, "maintainContext": False}},
                 lambda p: p.call("a", CallContext(conversation_id="japan")))
    assert single.output == "echo: a" and server.sessions[-1].turns == ["a"]


def test_usage_is_priced_per_modality_from_promptfoos_realtime_rates() -> None:
    usage = {"input_tokens": 300, "output_tokens": 500, "input_token_details": {"text_tokens": 100, "audio_tokens": 200, "cached_tokens": 50,
             "cached_tokens_details": {"text_tokens": 50}}, "output_token_details": {"text_tokens": 100, "audio_tokens": 400}}
    expected = 50 * 4e-06 + 50 * 4e-07 + 200 * 3.2e-05 + 100 * 1.6e-05 + 400 * 6.4e-05
    assert usage_cost("gpt-realtime", {}, usage) == pytest.approx(expected)
    assert usage_cost("gpt-realtime", {"audioCost": 0, "cost": 1e-06}, usage) == pytest.approx(100 * 1e-06 + 100 * 1e-06)
    assert usage_cost("some-unknown-model", {}, usage) is None


@pytest.mark.parametrize(("provider_id", "config", "message"), [
    ("openai:realtime:gpt-realtime-whisper", {}, "not a conversational Realtime model"),
    ("openai:realtime:gpt-realtime", {"websocketTimeout": "soon"}, "websocketTimeout must be a positive number"),
    ("openai:realtime:gpt-realtime", {"functionCallHandler": 5}, "functionCallHandler must be a file://"),
])
def test_settings_promptfoo_cannot_run_are_refused_when_made(provider_id: str, config: dict[str, Any], message: str) -> None:
    with pytest.raises(UnknownProviderError, match=message):
        make({"id": provider_id, "config": config})


def test_a_config_with_a_missing_handler_file_exits_2_before_any_call(tmp_path: Path, realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()
    write(tmp_path / "promptfooconfig.yaml", f"""
        prompts: ['hi']
        providers:
          - id: openai:realtime:{MODEL}
            config: {{functionCallHandler: 'file://missing.js:handle'}}
        tests: [{{}}]
        """)
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "missing.js" in result.err and "functionCallHandler" in result.err
    bad = run_cli("eval", "--no-progress", "-c", str(write(tmp_path / "whisper.yaml", "prompts: ['hi']\nproviders: [openai:realtime:gpt-realtime-whisper]\n")), cwd=tmp_path)
    assert bad.code == 2 and "whisper.yaml" in bad.err and "not a conversational Realtime model" in bad.err
    assert server.sessions == [] and server.refused == []


def test_eval_runs_the_examples_shape_end_to_end_without_leaking_the_key(tmp_path: Path, realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime(reply=lambda s, e: text_response("Salt comes from rocks." if "salt" in s.turns[-1] else "I cannot help.", s))
    write(tmp_path / "realtime-input.json", '[{"role": "user", "content": [{"type": "text", "text": "{{question}}"}]}]\n')
    code, rows = eval_rows(tmp_path, f"""
        prompts: [file://realtime-input.json]
        providers:
          - id: openai:realtime:{MODEL}
            config: {{modalities: ['text', 'audio'], voice: alloy, instructions: Be concise., websocketTimeout: 5000}}
        tests:
          - vars: {{question: why is the sea salty?}}
            assert: [{{type: icontains, value: rocks}}]
          - vars: {{question: what is the sea made of? salt?}}
            assert: [{{type: icontains, value: salt}}, {{type: javascript, value: 'output.length > 5'}}]
        """)
    assert code == 0 and [row["success"] for row in rows] == [True, True]
    assert rows[0]["response"]["output"] == "Salt comes from rocks." and rows[0]["response"]["tokenUsage"]["prompt"] == 10
    assert rows[0]["cost"] > 0 and rows[0]["response"]["metadata"]["usageEvents"][0]["input_tokens"] == 10
    assert len(server.sessions) == 2 and all(s.settings["output_modalities"] == ["audio"] for s in server.sessions)
    assert KEY not in (tmp_path / "out.json").read_text()


def test_eval_shows_a_failing_session_as_an_error_row(tmp_path: Path, realtime: Callable[..., RealtimeServer]) -> None:
    realtime(reply=lambda s, e: [{"type": "error", "error": {"type": "server_error", "message": "The server had an error."}}] if "boom" in s.turns[-1] else echo(s, e))
    code, rows = eval_rows(tmp_path, f"""
        prompts: ['{{{{q}}}}']
        providers: [{{id: 'openai:realtime:{MODEL}', config: {{modalities: [text]}}}}]
        tests:
          - vars: {{q: fine}}
            assert: [{{type: equals, value: 'echo: fine'}}]
          - vars: {{q: boom}}
        """)
    assert code == 1 and rows[0]["success"] is True
    assert rows[1]["success"] is False and rows[1]["error"] == "WebSocket error: server_error: The server had an error."


def test_eval_keeps_each_conversation_in_its_own_session(tmp_path: Path, realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()
    write(tmp_path / "conversation.js", """
        module.exports = async function ({ vars }) {
          const messages = [{ role: 'system', content: [{ type: 'input_text', text: vars.system_message }] }];
          for (const turn of vars._conversation || []) {
            messages.push({ role: 'user', content: [{ type: 'input_text', text: turn.input }] });
            messages.push({ role: 'assistant', content: [{ type: 'text', text: turn.output }] });
          }
          messages.push({ role: 'user', content: [{ type: 'input_text', text: vars.question }] });
          return messages;
        };
        """)
    code, rows = eval_rows(tmp_path, f"""
        prompts: [file://conversation.js]
        providers: [{{id: 'openai:realtime:{MODEL}', config: {{modalities: [text], websocketTimeout: 5000}}}}]
        defaultTest: {{vars: {{system_message: Be friendly.}}}}
        tests:
          - {{vars: {{question: Japan?}}, metadata: {{conversationId: japan}}, assert: [{{type: equals, value: 'echo: Japan?'}}]}}
          - {{vars: {{question: In autumn?}}, metadata: {{conversationId: japan}}, assert: [{{type: equals, value: 'echo: In autumn?'}}]}}
          - {{vars: {{question: WebSockets?}}, metadata: {{conversationId: tech}}, assert: [{{type: equals, value: 'echo: WebSockets?'}}]}}
        """)
    assert code == 0 and all(row["success"] for row in rows)
    assert sorted(s.turns for s in server.sessions) == [["Japan?", "In autumn?"], ["WebSockets?"]]


def test_a_conversation_whose_session_failed_goes_on_in_a_new_one(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime(reply=lambda s, e: [{"type": "error", "error": {"type": "server_error", "message": "overloaded"}}] if s.turns[-1] == "fail" else echo(s, e))

    async def run(provider: Any) -> list[Any]:
        replies = [await provider.call(text, CallContext(conversation_id=7)) for text in ("one", "fail", "two")]
        return [reply.output or reply.error for reply in replies]

    assert use({"id": f"openai:realtime:{MODEL}", "config": TEXT}, run) == ["echo: one", "WebSocket error: server_error: overloaded", "echo: two"]
    assert [s.turns for s in server.sessions] == [["one", "fail"], ["two"]]


def test_g711_audio_is_returned_as_it_came(realtime: Callable[..., RealtimeServer]) -> None:
    server = realtime()
    config = {"modalities": ["audio"], "output_audio_format": "g711_ulaw", "input_audio_format": "g711_alaw", "websocketTimeout": 5000}
    response = call({"id": f"openai:realtime:{MODEL}", "config": config}, "hey")
    assert response.audio is not None and response.audio["format"] == "g711_ulaw"
    assert base64.b64decode(response.audio["data"]) == b"echo:echo: hey hey"
    assert server.sessions[0].settings["audio"]["output"]["format"] == {"type": "audio/pcmu"}
    assert server.sessions[0].settings["audio"]["input"]["format"] == {"type": "audio/pcma"}


def test_a_bare_id_takes_the_configs_model_else_promptfoos_default(realtime: Callable[..., RealtimeServer]) -> None:
    assert make("openai:realtime").describe() == "openai:realtime:gpt-realtime-1.5"
    with pytest.raises(UnknownProviderError, match="gpt-realtime-translate is not a conversational"):
        make({"id": "openai:realtime", "config": {"model": "gpt-realtime-translate"}})
    realtime()
    assert call({"id": "openai:realtime", "config": {**TEXT, "model": MODEL}}, "hi").output == "echo: hi"


def test_the_beta_apis_event_names_are_read_too(realtime: Callable[..., RealtimeServer]) -> None:
    def beta(session: Session, event: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "response.audio.delta", "delta": base64.b64encode(b"\x01\x00\x02\x00").decode()},
                {"type": "response.audio_transcript.delta", "delta": "spoken "}, {"type": "response.text.delta", "delta": "words"},
                {"type": "response.audio.done"}]

    realtime(reply=beta)
    response = call({"id": f"openai:realtime:{MODEL}", "config": {"websocketTimeout": 5000}}, "hi")
    assert response.output == "spoken words" and response.audio is not None and response.audio["transcript"] == "spoken words"
    with wave.open(io.BytesIO(base64.b64decode(response.audio["data"]))) as audio:
        assert audio.readframes(audio.getnframes()) == b"\x01\x00\x02\x00"


def test_cached_audio_input_is_billed_at_the_cached_audio_rate_and_no_text_is_cached() -> None:
    from ci_grade.providers.openai_realtime_reply import usage_cost
    from ci_grade.providers.pricing import price_entry

    rates = price_entry("gpt-realtime")
    assert rates is not None
    usage = {"input_tokens": 100, "output_tokens": 0, "input_token_details": {"audio_tokens": 100, "cached_tokens": 40}}
    assert usage_cost("gpt-realtime", {}, usage) == pytest.approx(60 * rates["audioInput"] + 40 * rates["audioCachedInput"])


def test_spoken_output_of_a_model_without_audio_rates_costs_only_its_text() -> None:
    from ci_grade.providers.openai_realtime_reply import usage_cost
    from ci_grade.providers.pricing import price_entry

    rates = price_entry("gpt-4.1-mini")
    assert rates is not None and "audioOutput" not in rates
    usage = {"input_tokens": 0, "output_tokens": 10, "output_token_details": {"audio_tokens": 4, "text_tokens": 6}}
    assert usage_cost("gpt-4.1-mini", {}, usage) == pytest.approx(6 * rates["output"])
