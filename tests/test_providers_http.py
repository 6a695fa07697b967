"""The generic HTTP provider over httpx against loopback endpoints."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.providers.base import CallContext
from tests.conftest import write
from tests.provider_helpers import call, eval_rows, use
from tests.servers.counting_server import CountingServer
from tests.servers.llm_server import Recorded, Response


@pytest.fixture
def server() -> Iterator[CountingServer]:
    with CountingServer() as srv:
        yield srv


def _generate(recorded: Recorded) -> Response:
    body = recorded.json if isinstance(recorded.json, dict) else {}
    return Response(200, json={"output": f"answer to {body.get('input')}", "usage": {"tokens": 5}})


def spec(server: CountingServer, **config: Any) -> dict[str, Any]:
    return {"id": "http", "config": {"url": server.url + "/generate", **config}}


def test_object_body_headers_query_are_templated_and_transform_extracts(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_HTTP_TOKEN", "tok-123")
    server.route("POST", "/generate", _generate)
    config = spec(
        server,
        headers={"Authorization": "Bearer {{ env.MY_HTTP_TOKEN }}", "X-Lang": "{{lang}}"},
        queryParams={"lang": "{{lang}}", "v": 2},
        body={"input": "{{prompt}}", "meta": {"lang": "{{lang}}", "n": 3, "tags": ["{{lang}}", "x"]}},
        transformResponse="json.output",
    )
    response = call(config, 'say "hi"', CallContext(vars={"lang": "fr"}))
    assert response.error is None
    assert response.output == 'answer to say "hi"'
    (request,) = server.requests_to("/generate")
    assert request.method == "POST"
    assert request.path == "/generate?lang=fr&v=2"
    assert request.headers["X-Lang"] == "fr"
    assert request.headers["Authorization"] == "Bearer tok-123"
    assert request.headers["Content-Type"] == "application/json"
    assert request.json == {"input": 'say "hi"', "meta": {"lang": "fr", "n": 3, "tags": ["fr", "x"]}}


def test_json_string_body_is_rendered_safely(server: CountingServer) -> None:
    server.route("POST", "/generate", _generate)
    config = spec(server, body='{"input": "{{prompt}}", "n": 1}', headers={"Content-Type": "application/json"})
    prompt = 'quote " and backslash \\ and newline\n end'
    response = call(config, prompt)
    assert response.output == {"output": f"answer to {prompt}", "usage": {"tokens": 5}}
    assert server.requests_to("/generate")[0].json == {"input": prompt, "n": 1}


def test_text_body_is_form_encoded_and_trimmed_as_promptfoo_sends_it_and_text_reply_is_the_output(server: CountingServer) -> None:
    server.route("POST", "/echo", lambda rec: Response(200, body=b"plain: " + rec.body, headers={"Content-Type": "text/plain"}))
    response = call({"id": "http", "config": {"url": server.url + "/echo", "body": " Q={{prompt}}\n"}}, "why?")
    assert response.output == "plain: Q=why?"
    assert server.requests_to("/echo")[0].headers["Content-Type"] == "application/x-www-form-urlencoded"
    plain = {"id": "http", "config": {"url": server.url + "/echo", "body": "q={{prompt}}", "headers": {"content-type": "text/plain"}}}
    assert call(plain, "a").output == "plain: q=a"
    assert server.requests_to("/echo")[1].headers["content-type"] == "text/plain"
    # an object body with a Content-Type that is not JSON is refused, as promptfoo refuses it
    refused = call({"id": "http", "config": {"url": server.url + "/echo", "body": {"q": "{{prompt}}"}, "headers": {"Content-Type": "text/plain"}}}, "a")
    assert refused.error is not None and "the body is an object or array" in refused.error and len(server.requests_to("/echo")) == 2


def test_url_as_id_and_get_with_query_params(server: CountingServer) -> None:
    server.route("GET", "/search", lambda rec: Response(200, json={"hits": [rec.path]}))
    response = call({"id": server.url + "/search", "config": {"method": "get", "queryParams": {"q": "{{prompt}}"}, "body": {"ignored": True}}}, "cats & dogs")
    assert response.output == {"hits": ["/search?q=cats+%26+dogs"]}
    (request,) = server.requests_to("/search")
    assert request.method == "GET" and request.body == b""


@pytest.mark.parametrize(
    "transform",
    [
        "(json, text) => json.choices[0].text.toUpperCase()",
        "function (json) { return json.choices[0].text.toUpperCase(); }",
        "const t = json.choices[0].text;\nreturn t.toUpperCase();",
        "json => {\n  return json.choices[0].text.toUpperCase();\n}",
    ],
)
def test_transform_forms(server: CountingServer, transform: str) -> None:
    server.route("POST", "/generate", lambda rec: Response(200, json={"choices": [{"text": "shout"}]}))
    assert call(spec(server, transformResponse=transform)).output == "SHOUT"


def test_transform_sees_text_and_context(server: CountingServer) -> None:
    server.route("POST", "/generate", lambda rec: Response(201, body=b"not json", headers={"Content-Type": "text/plain", "X-Trace": "t-1"}))
    transform = "`${text}|${json}|${context.response.status}|${context.status}|${context.headers['x-trace']}`"
    assert call(spec(server, transformResponse=transform)).output == "not json|null|201|201|t-1"


def test_transform_returning_a_provider_response(server: CountingServer) -> None:
    server.route("POST", "/generate", _generate)
    transform = "({output: json.output, tokenUsage: {total: json.usage.tokens, prompt: 2, completion: 3}, cost: 0.5})"
    response = call(spec(server, body={"input": "{{prompt}}"}, transformResponse=transform), "x")
    assert response.output == "answer to x"
    assert (response.token_usage.total, response.token_usage.prompt) == (5, 2)
    assert response.cost == 0.5
    error = call(spec(server, transformResponse="({error: 'upstream said no'})"))
    assert error.error == "upstream said no"


def test_transform_files_resolve_against_the_config_folder(server: CountingServer, tmp_path: Path) -> None:
    server.route("POST", "/generate", _generate)
    write(tmp_path / "parsers" / "parse.py", "def pick(json, text, context):\n    return f\"{json['output']} ({context['status']})\"\n")
    write(tmp_path / "parsers" / "parse.js", "module.exports = (json, text, context) => json.output + '!';\n")
    body = {"input": "{{prompt}}"}
    py = call(spec(server, body=body, transformResponse="file://parsers/parse.py:pick"), "q", base_dir=tmp_path)
    assert py.output == "answer to q (200)"
    js = call(spec(server, body=body, transformResponse="file://parsers/parse.js"), "q", base_dir=tmp_path)
    assert js.output == "answer to q!"
    missing = call(spec(server, transformResponse="file://parsers/nope.py:pick"), "q", base_dir=tmp_path)
    assert missing.error is not None and missing.error.startswith("transformResponse failed: file not found")
    unnamed = call(spec(server, transformResponse="file://parsers/parse.py"), "q", base_dir=tmp_path)
    assert unnamed.error == "transformResponse failed: name the function to call: file://parsers/parse.py:<function>"


def test_transform_failures_are_errors(server: CountingServer) -> None:
    server.route("POST", "/generate", _generate)
    broken = call(spec(server, transformResponse="json.nothing.deeper"))
    assert broken.error is not None and broken.error.startswith("transformResponse failed:")
    assert "TypeError: Cannot read properties of undefined (reading 'deeper')" in broken.error
    empty = call(spec(server, transformResponse="json.missing"))
    assert empty.error == "transformResponse returned nothing (check the expression against the reply)"


def test_http_errors_show_status_and_excerpt_without_retry(server: CountingServer) -> None:
    server.route("POST", "/generate", lambda rec: Response(404, body=b"route /generate not found " + b"x" * 500, headers={"Content-Type": "text/plain"}))
    response = call(spec(server, headers={"Authorization": "Bearer very-secret"}))
    assert response.error is not None
    assert response.error.startswith("HTTP 404 Not Found: route /generate not found xxx")
    assert len(response.error) < 260
    assert "very-secret" not in response.error
    assert len(server.requests_to("/generate")) == 1


def test_rate_limits_and_server_errors_are_retried(server: CountingServer) -> None:
    server.route("POST", "/generate", _generate)
    server.fail(429, times=1, path="/generate", retry_after="0.2")
    server.fail(502, times=1, path="/generate")
    started = time.perf_counter()
    response = call(spec(server, body={"input": "{{prompt}}"}, transformResponse="json.output"), "q")
    assert response.output == "answer to q"
    assert len(server.requests_to("/generate")) == 3
    assert time.perf_counter() - started >= 0.19


def test_max_retries_from_config(server: CountingServer) -> None:
    server.fail(503, times=5, path="/generate")
    response = call(spec(server, maxRetries=1))
    assert response.error is not None and response.error.startswith("HTTP 503 Service Unavailable")
    assert response.error.endswith("(gave up after 2 attempts)")
    assert len(server.requests_to("/generate")) == 2


def test_timeout(server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "0")
    server.route("POST", "/generate", lambda rec: (time.sleep(1.0), Response(200, json={}))[1])
    assert call(spec(server, timeout=0.2)).error == "request timed out after 0.2s (gave up after 1 attempt)"


def test_invalid_request_is_not_retried(server: CountingServer) -> None:
    response = call(spec(server, headers={"X-Bad": "line\nbreak"}))
    assert response.error is not None and response.error.startswith("invalid request: ") and "header" in response.error
    assert server.requests_to("/generate") == []
    assert call({"id": "http", "config": {"url": "ftp://127.0.0.1/x"}}).error == "invalid request: UnsupportedProtocol: ftp://127.0.0.1/x"


def test_config_problems_are_errors() -> None:
    assert call("http").error == "provider http: config.url is required"
    unsupported = call({"id": "https", "config": {"url": "http://127.0.0.1:9/x", "transformRequest": "prompt"}})
    assert unsupported.error == "provider https: config.transformRequest is not supported by ci-grade"
    bad_template = call({"id": "http", "config": {"url": "http://127.0.0.1:9/x", "body": {"q": "{{ prompt "}}})
    assert bad_template.error is not None and bad_template.error.startswith("provider http: template syntax error")


def test_one_client_for_concurrent_calls(server: CountingServer) -> None:
    server.route("POST", "/generate", lambda rec: (time.sleep(0.01), _generate(rec))[1])

    async def burst(provider):  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(provider.call(f"q{i}") for i in range(30)))

    responses = use(spec(server, body={"input": "{{prompt}}"}, transformResponse="json.output", maxConcurrency=3), burst)
    assert sorted(r.output for r in responses) == sorted(f"answer to q{i}" for i in range(30))
    assert 1 <= server.connections <= 3


def test_eval_provider_error_is_an_error_row_and_other_tests_run(server: CountingServer, tmp_path: Path) -> None:
    def handler(recorded: Recorded) -> Response:
        if "crash" in recorded.json["input"]:
            return Response(400, json={"detail": "input rejected"})
        return _generate(recorded)

    server.route("POST", "/generate", handler)
    code, rows = eval_rows(
        tmp_path,
        f"""
        prompts: ['{{{{q}}}}']
        providers:
          - id: {server.url}/generate
            config:
              body: {{input: '{{{{prompt}}}}'}}
              transformResponse: json.output
        tests:
          - vars: {{q: hello}}
            assert: [{{type: contains, value: answer}}]
          - vars: {{q: crash}}
            assert: [{{type: contains, value: answer}}]
        """,
    )
    assert code == 1
    assert rows[0]["success"] is True and rows[0]["response"]["output"] == "answer to hello"
    assert rows[1]["failureReason"] == 2
    assert rows[1]["error"] == 'HTTP 400 Bad Request: {"detail": "input rejected"}'
    assert rows[1]["vars"] == {"q": "crash"}


def test_a_field_that_renders_to_json_is_sent_as_json(server: CountingServer) -> None:
    # promptfoo's processJsonBody: `messages: "{{prompt}}"` with a chat prompt sends the messages array
    server.route("POST", "/chat", lambda rec: Response(200, json={"ok": True}))
    chat = '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say Bob"}]'
    call({"id": server.url + "/chat", "config": {"body": {"model": "m", "messages": "{{prompt}}", "note": "[not json", "n": "{{ 3 }}"}}}, chat)
    (request,) = server.requests_to("/chat")
    assert request.json == {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say Bob"}], "note": "[not json", "n": "3"}


def test_query_params_join_the_urls_own_query(server: CountingServer) -> None:
    server.route("POST", "/k", lambda rec: Response(200, json={"path": rec.path}))
    response = call({"id": server.url + "/k?api-version=2024&key=abc", "config": {"queryParams": {"extra": "{{prompt}}"}}}, "1")
    assert response.output == {"path": "/k?api-version=2024&key=abc&extra=1"}


@pytest.mark.parametrize(
    ("validate", "status", "error"),
    [
        ("(s) => s === 201", 200, "HTTP call failed with status 200 OK"),
        ("status < 500", 404, None),
        ("function (status) { return status === 404; }", 404, None),
    ],
)
def test_validate_status_decides_which_statuses_are_replies(server: CountingServer, validate: str, status: int, error: str | None) -> None:
    server.route("POST", "/v", lambda rec: Response(status, json={"reply": f"from {status}"}))
    response = call({"id": server.url + "/v", "config": {"validateStatus": validate}}, "hi")
    if error:
        assert response.error is not None and response.error.startswith(error)
    else:
        assert response.error is None and response.output == {"reply": f"from {status}"}


def test_token_usage_in_the_reply_is_kept(server: CountingServer) -> None:
    usage = {"prompt": 10, "completion": 20, "total": 30}
    server.route("POST", "/u", lambda rec: Response(200, json={"output": "hi", "tokenUsage": usage}))
    for transform in (None, "json.output"):
        response = call({"id": server.url + "/u", "config": {"transformResponse": transform} if transform else {}}, "x")
        assert (response.token_usage.prompt, response.token_usage.completion, response.token_usage.total) == (10, 20, 30)
