"""`openai:` ids as promptfoo reads them: the legacy Completions API, a bare model's API, and the
kinds refused before any call; over loopback through the openai SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade.errors import UnknownProviderError
from tests.conftest import run_cli, write
from tests.provider_helpers import call, eval_rows, make
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import LLMServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-ids-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        for name in ("OPENAI_MAX_TOKENS", "OPENAI_TEMPERATURE", "OPENAI_TOP_P", "OPENAI_STOP", "OPENAI_BEST_OF"):
            monkeypatch.delenv(name, raising=False)
        yield srv


def test_completion_sends_promptfoos_body_and_reads_the_first_choice(server: CountingServer) -> None:
    server.on_chat(None, " Paris.", usage=None)
    response = call({"id": "openai:completion:gpt-3.5-turbo-instruct", "config": {"seed": 7}}, "The capital of France is")
    assert response.error is None and response.output == " Paris." and response.finish_reason == "stop"
    (request,) = server.requests_to("/v1/completions")
    assert request.headers["authorization"] == "Bearer sk-test-ids-0123456789"
    assert request.json == {
        "model": "gpt-3.5-turbo-instruct", "prompt": "The capital of France is", "max_tokens": 1024, "temperature": 0, "top_p": 1,
        "presence_penalty": 0, "frequency_penalty": 0, "best_of": 1, "seed": 7, "stop": ["<|im_end|>", "<|endoftext|>"],
    }
    usage = response.token_usage
    assert usage.total == usage.prompt + usage.completion > 0
    assert response.cost == pytest.approx(usage.prompt * 1.5e-6 + usage.completion * 2e-6)


def test_completion_options_come_from_config_then_the_environment_and_passthrough_goes_last(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_STOP", '["END"]')
    monkeypatch.setenv("OPENAI_TEMPERATURE", "0.4")
    config = {"max_tokens": 20, "stop": ["ignored, the variable wins"], "passthrough": {"top_p": 0.5, "suffix": "!"}}
    call({"id": "openai:completion:davinci-002", "config": config}, "hi")
    (request,) = server.requests_to("/v1/completions")
    body = request.json
    assert (body["max_tokens"], body["temperature"], body["stop"], body["top_p"], body["suffix"]) == (20, 0.4, ["END"], 0.5, "!")
    monkeypatch.setenv("OPENAI_STOP", "[not json")
    assert call("openai:completion:davinci-002", "hi").error is not None


@pytest.mark.parametrize(("provider_id", "path", "model"), [
    ("openai:gpt-3.5-turbo-instruct", "/v1/completions", "gpt-3.5-turbo-instruct"),
    ("openai:gpt-5.6-terra", "/v1/responses", "gpt-5.6-terra"),
    ("openai:gpt-6", "/v1/responses", "gpt-6"),
    ("openai:gpt-5.5", "/v1/chat/completions", "gpt-5.5"),
    ("openai:gpt-35-turbo", "/v1/chat/completions", "gpt-35-turbo"),  # Azure's spelling of GPT 3.5, not GPT 35
    ("openai:gpt-4.1-mini", "/v1/chat/completions", "gpt-4.1-mini"),
])
def test_a_bare_model_goes_to_the_api_promptfoo_sends_it_to(server: CountingServer, provider_id: str, path: str, model: str) -> None:
    server.on_chat(None, "ok")
    assert call(provider_id, "hi").output == "ok"
    (request,) = server.requests
    assert request.path.split("?")[0] == path and request.json["model"] == model


@pytest.mark.parametrize("provider_id", ["openai:speech:gpt-4o-mini-tts", "openai:transcription:whisper-1", "openai:tts:gpt-4o-mini-tts", "openai:video:sora-2", "openai:agents:triage", "openai:gpt-live-1", "openai:codex", "openai:codex-sdk"])
def test_kinds_ci_grade_does_not_run_are_refused_when_made(provider_id: str) -> None:
    with pytest.raises(UnknownProviderError, match="is not supported by ci-grade; it runs openai:chat:<model>"):
        make(provider_id)


def test_a_config_naming_one_exits_2_before_any_call(tmp_path: Path, server: LLMServer) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['hi']\nproviders: [openai:chat:gpt-4.1-mini, openai:video:sora-2]\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "promptfooconfig.yaml:2" in result.err and "openai:video" in result.err
    assert server.requests == []


def test_eval_with_a_completion_provider(tmp_path: Path, server: CountingServer) -> None:
    server.on_chat(None, " Paris")
    code, rows = eval_rows(tmp_path, """
        prompts: ['Capital of {{country}}:']
        providers: [openai:completion:gpt-3.5-turbo-instruct]
        tests: [{vars: {country: France}, assert: [{type: contains, value: Paris}]}]
        """)
    assert code == 0 and rows[0]["response"]["output"] == " Paris" and rows[0]["cost"] > 0
