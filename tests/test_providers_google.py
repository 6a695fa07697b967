"""Gemini API (`google:`) and Vertex AI (`vertex:`) through google-genai / google-auth against loopback stand-ins."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade import redact
from ci_grade.providers.base import CallContext
from tests.provider_helpers import call, eval_rows, use
from tests.servers import google_server
from tests.servers.counting_server import CountingServer
from tests.servers.google_server import ServiceAccount, WorkloadIdentity, google_error

KEY = "AIza-test-secret-4242"
FLASH = "gemini-2.5-flash"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    with CountingServer() as srv:
        for name in ("GOOGLE_API_KEY", "PALM_API_KEY", "GOOGLE_API_HOST", "PALM_API_HOST", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.setenv("GOOGLE_API_BASE_URL", srv.url)
        monkeypatch.setenv("CI_GRADE_RETRY_BASE_SECONDS", "0.01")
        yield srv


@pytest.fixture
def account(server: CountingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServiceAccount:
    """A service-account key file named by GOOGLE_APPLICATION_CREDENTIALS, its tokens issued by the stand-in."""
    sa = ServiceAccount.write(tmp_path, server)
    for name in ("VERTEX_PROJECT_ID", "GOOGLE_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "VERTEX_REGION", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(sa.path))
    monkeypatch.setenv("VERTEX_API_HOST", server.url)
    return sa


def test_chat_prompt_system_instruction_options_usage_and_cost(server: CountingServer) -> None:
    reply = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Paris."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 150, "thoughtsTokenCount": 50, "totalTokenCount": 1200},
    }
    google_server.install_gemini(server, KEY, FLASH, lambda req: reply)
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}])
    config = {"temperature": 0.2, "maxOutputTokens": 64, "systemInstruction": "You are a geographer.", "headers": {"x-team": "evals"}}
    response = call({"id": f"google:{FLASH}", "config": config}, prompt)
    assert response.error is None and response.output == "Paris."
    assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.reasoning, response.token_usage.total) == (1000, 150, 50, 1200)
    assert response.cost == pytest.approx(1000 * 3e-7 + 200 * 2.5e-6)  # thinking tokens are billed as output
    (request,) = server.requests_to(f"/v1beta/models/{FLASH}:generateContent")
    assert google_server.header(request, "x-goog-api-key") == KEY and google_server.header(request, "x-team") == "evals"
    assert request.json["systemInstruction"] == {"parts": [{"text": "You are a geographer."}, {"text": "Be brief."}]}
    assert request.json["contents"] == [{"role": "user", "parts": [{"text": "Capital of France?"}]}]
    assert request.json["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 64}


def test_response_schema_safety_settings_and_generation_config_as_promptfoo_sends_them(server: CountingServer) -> None:
    google_server.install_gemini(server, KEY, FLASH, lambda req: '{"city": "Paris"}')
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}]
    config = {"responseSchema": schema, "safetySettings": safety, "generationConfig": {"topK": 3, "seed": 7}}
    response = call({"id": f"google:{FLASH}", "config": config}, "Where is the Louvre?")
    assert response.output == '{"city": "Paris"}'
    (request,) = server.requests_to(f"/v1beta/models/{FLASH}:generateContent")
    generation = request.json["generationConfig"]
    assert generation["responseMimeType"] == "application/json" and generation["topK"] == 3 and generation["seed"] == 7
    assert generation["responseSchema"]["properties"]["city"]["type"].lower() == "string"
    assert request.json["safetySettings"] == safety


def test_function_declarations_and_a_function_call_reply_as_promptfoo_shows_it(server: CountingServer) -> None:
    call_part = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    google_server.install_gemini(server, KEY, FLASH, lambda req: [call_part])
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    config = {"tools": tools, "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}
    response = call({"id": f"google:{FLASH}", "config": config}, "Weather in Paris?")
    assert response.output == [call_part]
    assert response.finish_reason == "stop"  # the reply's STOP, as promptfoo reads it
    (request,) = server.requests_to(f"/v1beta/models/{FLASH}:generateContent")
    (declaration,) = request.json["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "get_weather" and declaration["parameters"]["properties"]["city"]["type"].lower() == "string"
    assert request.json["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


@pytest.mark.parametrize("spelling", ["responseSchema", "response_schema"])
def test_a_response_schema_given_twice_is_an_error_row_without_a_call(server: CountingServer, spelling: str) -> None:
    google_server.install_gemini(server, KEY, FLASH)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    response = call({"id": f"google:{FLASH}", "config": {"responseSchema": schema, "generationConfig": {spelling: schema}}}, "Where?")
    assert response.error == "`responseSchema` provided but `generationConfig.response_schema` already set."
    assert server.requests_to(f"/v1beta/models/{FLASH}:generateContent") == []


@pytest.mark.parametrize(("reason", "normalized"), [("MAX_TOKENS", "length"), ("STOP", "stop"), ("OTHER", "other"), (None, None)])
def test_the_finish_reason_is_normalized_as_promptfoo_does(server: CountingServer, reason: str | None, normalized: str | None) -> None:
    candidate = {"content": {"role": "model", "parts": [{"text": "Paris is the cap"}]}, **({"finishReason": reason} if reason else {})}
    google_server.install_gemini(server, KEY, FLASH, lambda req: {"candidates": [candidate]})
    response = call(f"google:{FLASH}", "Capital of France?")
    assert (response.output, response.finish_reason) == ("Paris is the cap", normalized)


def test_grader_schema_is_sent_as_a_json_schema(server: CountingServer) -> None:
    google_server.install_gemini(server, KEY, FLASH, lambda req: '{"pass": true}')
    schema = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "additionalProperties": False}
    call(f"google:{FLASH}", "grade this", CallContext(response_schema=schema))
    (request,) = server.requests_to(f"/v1beta/models/{FLASH}:generateContent")
    assert request.json["generationConfig"]["responseJsonSchema"] == schema


def test_google_api_key_comes_before_gemini_api_key_and_a_missing_key_is_named(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    google_server.install_gemini(server, "the-google-key", FLASH)
    monkeypatch.setenv("GOOGLE_API_KEY", "the-google-key")
    assert call(f"google:{FLASH}", "hi").output == "echo: hi"
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.delenv("GEMINI_API_KEY")
    error = call(f"google:{FLASH}", "hi").error
    assert error is not None and "GOOGLE_API_KEY or GEMINI_API_KEY" in error
    assert len(server.requests) == 1


def test_429_with_retry_after_and_5xx_are_retried_400_is_not(server: CountingServer) -> None:
    path = f"/v1beta/models/{FLASH}:generateContent"
    google_server.install_gemini(server, KEY, FLASH)
    exhausted = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}
    server.fail(429, path=path, retry_after="0", body=exhausted)
    server.fail(503, path=path, times=1)
    assert call(f"google:{FLASH}", "hi").output == "echo: hi"
    assert len(server.requests_to(path)) == 3
    google_server.install_gemini(server, KEY, FLASH, lambda req: google_error(400, "Invalid JSON payload received."))
    response = call(f"google:{FLASH}", "hi")
    assert response.error == "API error 400: Invalid JSON payload received."
    assert len(server.requests_to(path)) == 4


def test_a_blocked_reply_is_an_error_naming_the_reason(server: CountingServer) -> None:
    blocked = {"candidates": [{"finishReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}]}]}
    google_server.install_gemini(server, KEY, FLASH, lambda req: blocked)
    response = call(f"google:{FLASH}", "hi")
    assert response.error == "Response was blocked with finish reason: SAFETY\nSafety ratings: HARM_CATEGORY_HARASSMENT: HIGH"


def test_embeddings(server: CountingServer) -> None:
    google_server.install_gemini(server, KEY, "gemini-embedding-001")
    same = use("google:embedding:gemini-embedding-001", lambda p: p.embed("the cat sat"))
    assert same.error is None and same.embedding == google_server.bag_of_words_embedding("the cat sat")
    (request,) = server.requests_to("/v1beta/models/gemini-embedding-001:batchEmbedContents")
    assert request.json["requests"][0]["content"]["parts"] == [{"text": "the cat sat"}]


def test_vertex_gemini_with_a_service_account_file(server: CountingServer, account: ServiceAccount) -> None:
    google_server.install_vertex(server, account, FLASH)

    async def twice(provider):  # type: ignore[no-untyped-def]
        return [await provider.call("one"), await provider.call("two")]

    first, second = use(f"vertex:{FLASH}", twice)
    assert (first.output, second.output) == ("echo: one", "echo: two")
    assert len(account.tokens) == 1  # one token exchange, reused while valid
    requests = server.requests_to(f"/v1/projects/{account.project}/locations/us-central1/publishers/google/models/{FLASH}:generateContent")
    assert [google_server.header(r, "authorization") for r in requests] == [f"Bearer {account.tokens[0]}"] * 2


@pytest.mark.parametrize("given_by", ["environment", "config"])
def test_vertex_with_workload_identity_federation_as_github_actions_sets_it_up(server: CountingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given_by: str) -> None:
    identity = WorkloadIdentity.write(tmp_path, server)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    if given_by == "environment":  # as google-github-actions/auth exports it
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(identity.path))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", identity.project)
    monkeypatch.setenv("VERTEX_API_HOST", server.url)
    google_server.install_vertex(server, identity, FLASH)
    config = {"credentials": f"file://{identity.path}"} if given_by == "config" else {}
    response = call({"id": f"vertex:{FLASH}", "config": config}, "hello")
    assert response.error is None and response.output == "echo: hello"
    assert len(server.requests_to("/actions/oidc")) == 1 and len(identity.tokens) == 1
    (request,) = server.requests_to(f"/v1/projects/{identity.project}/locations/us-central1/publishers/google/models/{FLASH}:generateContent")
    assert google_server.header(request, "authorization") == f"Bearer {identity.tokens[0]}"


def test_vertex_project_and_region_from_config_and_embeddings(server: CountingServer, account: ServiceAccount, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERTEX_PROJECT_ID", account.project)
    google_server.install_vertex(server, account, "text-embedding-004", region="europe-west4")
    spec = {"id": "vertex:embedding:text-embedding-004", "config": {"region": "europe-west4"}}
    response = use(spec, lambda p: p.embed("hello world"))
    assert response.error is None and response.embedding == google_server.bag_of_words_embedding("hello world")
    assert response.token_usage.total == 2


def test_vertex_claude_rawpredict(server: CountingServer, account: ServiceAccount) -> None:
    model = "claude-sonnet-4-5@20250929"
    google_server.install_vertex_claude(server, account, model)
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    response = call({"id": f"vertex:{model}", "config": {"region": "us-east5", "headers": {"x-team": "evals"}}}, prompt)
    assert response.error is None and response.output == "echo: hi"
    assert response.cost == pytest.approx(100 * 3e-6 + 20 * 15e-6)
    (request,) = server.requests_to(f"/v1/projects/{account.project}/locations/us-east5/publishers/anthropic/models/{model}:rawPredict")
    assert request.json["system"] == "Be brief." and request.json["max_tokens"] == 512
    assert google_server.header(request, "x-team") == "evals"  # config.headers are sent, as promptfoo sends them


LLAMA = "llama-3.3-70b-instruct-maas"


def test_vertex_llama_through_the_openai_compatible_endpoint(server: CountingServer, account: ServiceAccount) -> None:
    google_server.install_vertex_maas(server, account, f"meta/{LLAMA}", region="us-east5")
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    spec = {"id": f"vertex:{LLAMA}", "config": {"region": "us-east5", "temperature": 0.2, "maxOutputTokens": 64, "topP": 0.9}}
    response = call(spec, prompt)
    assert response.error is None and response.output == "echo: hi"
    assert (response.token_usage.prompt, response.token_usage.completion) == (12, 5)
    (request,) = server.requests_to(f"/v1/projects/{account.project}/locations/us-east5/endpoints/openapi/chat/completions")
    assert request.json["messages"][0] == {"role": "system", "content": "Be brief."}
    assert (request.json["temperature"], request.json["max_tokens"], request.json["top_p"]) == (0.2, 64, 0.9)
    assert google_server.header(request, "authorization") == f"Bearer {account.tokens[0]}"


def test_vertex_maas_token_is_refreshed_as_it_expires(server: CountingServer, account: ServiceAccount) -> None:
    account.lifetime = 60  # inside google-auth's refresh margin: expired at once
    google_server.install_vertex_maas(server, account, "openai/gpt-oss-120b-maas")

    async def twice(provider):  # type: ignore[no-untyped-def]
        return [await provider.call("one"), await provider.call("two")]

    first, second = use("vertex:gpt-oss-120b-maas", twice)
    assert (first.output, second.output) == ("echo: one", "echo: two")
    assert len(account.tokens) == 2
    requests = server.requests_to(f"/v1/projects/{account.project}/locations/us-central1/endpoints/openapi/chat/completions")
    assert [google_server.header(r, "authorization") for r in requests] == [f"Bearer {t}" for t in account.tokens]


def test_vertex_maas_errors_are_error_rows(server: CountingServer, account: ServiceAccount) -> None:
    google_server.install_vertex_maas(server, account, f"meta/{LLAMA}")
    error = call("vertex:meta/llama-4-scout-17b-16e-instruct-maas", "hi").error
    assert error is not None and "was not found" in error
    account.path.write_text("{not json")
    error = call(f"vertex:{LLAMA}", "hi").error
    assert error is not None and error.startswith("Google credentials could not be loaded")


def test_an_unusable_credentials_file_is_an_error_row_not_a_crash(server: CountingServer, account: ServiceAccount) -> None:
    account.path.write_text("{not json")
    error = call(f"vertex:{FLASH}", "hi").error
    assert error is not None and error.startswith("Google credentials could not be loaded")


def test_the_service_accounts_private_key_and_the_api_key_are_masked(account: ServiceAccount) -> None:
    redactor = redact.Redactor.from_env({"GOOGLE_APPLICATION_CREDENTIALS": str(account.path), "GEMINI_API_KEY": KEY})
    body = account.private_key_pem.splitlines()[1]
    leaked = f"key={KEY} pem={json.dumps(account.private_key_pem)}"
    assert KEY not in redactor.text(leaked) and body not in redactor.text(leaked)
    inline = redact.Redactor()
    inline.collect({"providers": [{"id": f"vertex:{FLASH}", "config": {"credentials": account.path.read_text()}}]})
    assert body not in inline.text(account.private_key_pem)


def test_eval_google_text_schema_tools_similar_and_an_error_row(server: CountingServer, tmp_path: Path) -> None:
    def reply(request: dict) -> object:
        text = google_server.last_text(request)
        if "boom" in text:
            return google_error(400, "Request contains an invalid argument.")
        if request.get("tools"):
            return [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
        if "responseSchema" in request.get("generationConfig", {}):
            return '{"city": "Paris"}'
        return f"A cat sat on the mat. {request.get('systemInstruction', {}).get('parts', [{}])[0].get('text', '')}"

    google_server.install_gemini(server, KEY, FLASH, reply)
    google_server.install_gemini(server, KEY, "gemini-embedding-001")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['[{{"role": "system", "content": "Sys"}}, {{"role": "user", "content": "{{{{q}}}}"}}]']
        providers:
          - id: google:{FLASH}
            label: plain
          - id: google:{FLASH}
            label: schema
            config: {{responseSchema: {{type: object, properties: {{city: {{type: string}}}}}}}}
          - id: google:{FLASH}
            label: tools
            config: {{tools: [{{functionDeclarations: [{{name: get_weather, parameters: {{type: OBJECT, properties: {{city: {{type: STRING}}}}}}}}]}}]}}
        defaultTest:
          options: {{provider: {{embedding: google:embedding:gemini-embedding-001}}}}
        tests:
          - vars: {{q: cat}}
            assert:
              - {{type: javascript, value: "typeof output === 'string' ? output.includes('Paris') || output.includes('Sys') : output[0].functionCall.args.city === 'Paris'"}}
          - vars: {{q: boom}}
            assert: [{{type: contains, value: cat}}]
        """,
    )
    assert code == 1
    assert [r["success"] for r in rows] == [True, True, True, False, False, False]
    assert rows[0]["response"]["output"] == "A cat sat on the mat. Sys"
    assert rows[1]["response"]["output"] == '{"city": "Paris"}'
    assert rows[2]["response"]["output"] == [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
    assert rows[3]["failureReason"] == 2 and rows[3]["error"] == "API error 400: Request contains an invalid argument."
    assert rows[0]["response"]["tokenUsage"]["total"] > 0 and rows[0]["cost"] > 0
    assert KEY not in (tmp_path / "out.json").read_text()

    write_similar = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers: [google:{FLASH}]
        defaultTest:
          options: {{provider: {{embedding: google:embedding:gemini-embedding-001}}}}
        tests:
          - vars: {{q: cat}}
            assert: [{{type: similar, value: "A cat sat on the mat.", threshold: 0.9}}]
        """,
    )
    assert write_similar[0] == 0 and write_similar[1][0]["success"] is True
    assert server.requests_to("/v1beta/models/gemini-embedding-001:batchEmbedContents")


def test_eval_vertex_gemini_and_claude_with_adc(server: CountingServer, account: ServiceAccount, tmp_path: Path) -> None:
    google_server.install_vertex(server, account, FLASH)
    google_server.install_vertex_claude(server, account, "claude-sonnet-4-5@20250929")
    google_server.install_vertex_maas(server, account, f"meta/{LLAMA}")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers:
          - vertex:{FLASH}
          - id: vertex:claude-sonnet-4-5@20250929
            config: {{region: us-east5}}
          - vertex:{LLAMA}
        tests:
          - vars: {{q: hello}}
            assert: [{{type: equals, value: "echo: hello"}}]
        """,
    )
    assert code == 0 and [r["success"] for r in rows] == [True, True, True]
    assert len(account.tokens) == 3  # one exchange per provider
    written = (tmp_path / "out.json").read_text()
    assert account.private_key_pem.splitlines()[1] not in written


def test_llm_rubric_graded_by_gemini_when_only_a_gemini_key_is_set(server: CountingServer, tmp_path: Path) -> None:
    def reply(request: dict) -> str:
        if "rubric" in json.dumps(request).lower() or request.get("generationConfig", {}).get("responseJsonSchema"):
            return '{"reason": "It greets.", "pass": true, "score": 1}'
        return "Hello there!"

    from ci_grade.grading.graders import DEFAULT_GEMINI_TEXT

    grader = DEFAULT_GEMINI_TEXT.removeprefix("google:")
    assert grader != FLASH
    google_server.install_gemini(server, KEY, grader, reply)
    google_server.install_gemini(server, KEY, FLASH, lambda req: "Hello there!")
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['Say hello']
        providers: [google:{FLASH}]
        tests:
          - assert: [{{type: llm-rubric, value: Is a greeting}}]
        """,
    )
    assert code == 0 and rows[0]["success"] is True
    (graded,) = server.requests_to(f"/v1beta/models/{grader}:generateContent")
    assert "Is a greeting" in json.dumps(graded.json)
    assert rows[0]["gradingResult"]["componentResults"][0]["reason"] == "It greets."


def test_unsupported_google_kinds_are_refused(server: CountingServer) -> None:
    from ci_grade.errors import UnknownProviderError
    from tests.provider_helpers import make

    with pytest.raises(UnknownProviderError, match="video API is not supported"):
        make("google:video:veo-3.0-generate-001")
    with pytest.raises(UnknownProviderError, match="Gemini, Claude, embedding and model-as-a-service models"):
        make("vertex:chat-bison")


@pytest.mark.parametrize(("config", "env", "url"), [
    ({"region": "global"}, {}, "https://aiplatform.googleapis.com"),
    ({}, {"GOOGLE_CLOUD_LOCATION": "europe-west4"}, "https://europe-west4-aiplatform.googleapis.com"),
    ({}, {}, "https://us-central1-aiplatform.googleapis.com"),
    ({"region": "global", "apiHost": "vertex.example.com/"}, {}, "https://vertex.example.com"),
])
def test_vertex_calls_the_global_endpoint_or_the_regions(config: dict[str, str], env: dict[str, str], url: str) -> None:
    from ci_grade.providers.google.auth import VertexAuth

    assert VertexAuth(config, env, None).base_url() == url  # Google's endpoints (the stand-in is reached through apiHost)


def test_vertex_maas_unreadable_credentials_with_a_configured_project_are_one_clear_error(server: CountingServer, account: ServiceAccount, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project comes from the environment, so nothing has loaded the key file before the call:
    it is read first, and its error is the row's, not a retried connection failure."""
    google_server.install_vertex_maas(server, account, f"meta/{LLAMA}")
    monkeypatch.setenv("VERTEX_PROJECT_ID", account.project)
    account.path.write_text("{not json")
    error = call(f"vertex:{LLAMA}", "hi").error
    assert error is not None and error.startswith("Google credentials could not be loaded") and "after retries" not in error
    assert server.requests_to(f"/v1/projects/{account.project}/locations/us-central1/endpoints/openapi/chat/completions") == []


def test_application_default_credentials_are_searched_once_per_provider(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a key file, google-auth's search probes the metadata server (seconds each time):
    a search that found nothing is not repeated for every row."""
    import google.auth
    from google.auth import exceptions

    searches: list[int] = []

    def nothing_found(*args: object, **kwargs: object) -> object:
        searches.append(1)
        raise exceptions.DefaultCredentialsError("Your default credentials were not found.")

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setattr(google.auth, "default", nothing_found)

    async def three(provider):  # type: ignore[no-untyped-def]
        return [await provider.call(q) for q in ("one", "two", "three")]

    errors = [r.error for r in use({"id": f"vertex:{FLASH}", "config": {"projectId": "p"}}, three)]
    assert errors == ["Google credentials could not be loaded: Your default credentials were not found."] * 3
    assert len(searches) == 1 and server.requests == []


def test_google_api_host_names_the_endpoint_and_its_trailing_slash_is_dropped(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """GOOGLE_API_HOST wins over GOOGLE_API_BASE_URL (promptfoo's order); a value with a scheme is used as given."""
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    google_server.install_gemini(server, KEY, FLASH, lambda req: reply)
    monkeypatch.setenv("GOOGLE_API_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("GOOGLE_API_HOST", server.url + "/")
    response = call(f"google:{FLASH}", "hello")
    assert response.error is None and response.output == "hi"
    assert [r.path for r in server.requests] == [f"/v1beta/models/{FLASH}:generateContent"]


def test_vertex_kinds_a_model_serves(account: ServiceAccount) -> None:
    """A Gemini model on Vertex grades text and embeds; an embedding model only embeds; neither moderates."""

    async def kinds(provider):  # type: ignore[no-untyped-def]
        return [provider.supports(kind) for kind in ("text", "embedding", "moderation")]

    assert use(f"vertex:{FLASH}", kinds) == [True, True, False]
    assert use("vertex:embedding:text-embedding-004", kinds) == [False, True, False]
