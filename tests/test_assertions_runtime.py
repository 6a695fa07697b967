"""Provider-call assertions end to end against the loopback OpenAI server: latency, cost, webhook,
is-refusal, finish-reason, is-valid-openai-tools-call and is-valid-openai-function-call."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.config import models
from ci_grade.config.models import Assertion
from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, RunContext
from ci_grade.grading.runtime import latency, normalize_finish_reason
from ci_grade.providers.base import ProviderResponse
from tests.assertion_runs import Outcome, evaluate, first, grade_outputs
from tests.servers.llm_server import LLMServer, Recorded, Response

MODEL = "openai:chat:gpt-4.1-mini"


def by_description(rows: list[dict[str, Any]]) -> dict[str, Outcome]:
    return {row["description"]: first(row) for row in rows}


def openai_config(tests: list[dict[str, Any]], provider: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"prompts": ["{{q}}"], "providers": [provider or MODEL], "tests": tests, **extra}


def case(description: str, q: str, *assertions: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "vars": {"q": q}, "assert": list(assertions)}


def test_latency(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("slow", "ok", latency=0.3).on_chat("fast", "ok")
    rows = evaluate(
        tmp_path,
        openai_config(
            [
                case("fast within threshold", "fast", {"type": "latency", "threshold": 600_000}),  # a bound no loaded machine reaches
                case("slow over threshold", "slow 1", {"type": "latency", "threshold": 100}),
                case("not-latency over threshold", "slow 2", {"type": "not-latency", "threshold": 100}),
                case("metric only", "fast metric", {"type": "latency", "metric": "latency_ms", "weight": 0}),
                case("no threshold", "fast 2", {"type": "latency"}),
                case("metric with weight", "fast 3", {"type": "latency", "metric": "latency_ms"}),
                case("not-latency without threshold", "fast 4", {"type": "not-latency", "metric": "m", "weight": 0}),
            ]
        ),
    )
    r = by_description(rows)
    assert {k: v.status for k, v in r.items()} == {
        "fast within threshold": "pass", "slow over threshold": "fail", "not-latency over threshold": "pass",
        "metric only": "pass", "no threshold": "error", "metric with weight": "error", "not-latency without threshold": "error",
    }  # fmt: skip
    assert r["slow over threshold"].reason.startswith("Latency ") and r["slow over threshold"].reason.endswith("ms is greater than threshold 100ms")
    metric_row = next(row for row in rows if row["description"] == "metric only")
    assert r["metric only"].score == pytest.approx(metric_row["latencyMs"], abs=1.0)
    assert metric_row["namedScores"]["latency_ms"] == pytest.approx(r["metric only"].score)
    assert "set `metric` and `weight: 0`" in r["metric with weight"].reason


def test_latency_of_a_cached_response_is_an_error(tmp_path: Path) -> None:
    run = RunContext(env={}, base_dir=tmp_path, graders=None)  # type: ignore[arg-type]
    ctx = AssertionContext(
        assertion=Assertion(type="latency", threshold=1000),
        value=None,
        output="x",
        vars={},
        prompt="p",
        prompt_label="p",
        test=models.TestCase(),
        response=ProviderResponse(output="x", cached=True, latency_ms=3),
        run=run,
    )
    with pytest.raises(GraderError, match="cached response"):
        asyncio.run(latency(ctx))


def test_latency_and_cost_need_a_provider_call(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "latency": ("canned", {"type": "latency", "threshold": 1000}),
            "cost": ("canned", {"type": "cost", "threshold": 1}),
        },
    )
    assert r["latency"].status == r["cost"].status == "error"
    assert "graded from providerOutput" in r["latency"].reason and "no latency" in r["latency"].reason
    assert "no cost" in r["cost"].reason


def test_cost(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, "answer", usage={"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500})
    expected_cost = 1000 * 0.4e-6 + 500 * 1.6e-6  # gpt-4.1-mini list price
    rows = evaluate(
        tmp_path,
        openai_config(
            [
                case("under threshold", "a", {"type": "cost", "threshold": 0.002}),
                case("over threshold", "b", {"type": "cost", "threshold": 0.001}),
                case("not-cost", "c", {"type": "not-cost", "threshold": 0.001}),
                case("metric only", "d", {"type": "cost", "metric": "inference_cost", "weight": 0}),
                case("no threshold", "e", {"type": "cost"}),
            ]
        ),
    )
    r = by_description(rows)
    assert {k: v.status for k, v in r.items()} == {
        "under threshold": "pass", "over threshold": "fail", "not-cost": "pass", "metric only": "pass", "no threshold": "error",
    }  # fmt: skip
    assert r["over threshold"].reason == "Cost 0.0012 is greater than threshold 0.001"
    assert r["metric only"].score == pytest.approx(expected_cost)
    metric_row = next(row for row in rows if row["description"] == "metric only")
    assert metric_row["namedScores"] == {"inference_cost": pytest.approx(expected_cost)}
    assert metric_row["success"] is True and metric_row["score"] == 0.0  # weight 0: no effect on the quality score


def test_unknown_cost_is_an_error_and_echo_costs_nothing(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, "answer")
    (unknown,) = evaluate(tmp_path / "a", openai_config([case("x", "q", {"type": "cost", "threshold": 1})], provider="openai:chat:mystery-model"))
    assert first(unknown).status == "error"
    assert first(unknown).reason.startswith("cost is unknown: openai:chat:mystery-model did not report one")
    (echo,) = evaluate(tmp_path / "b", {"prompts": ["{{q}}"], "providers": ["echo"], "tests": [case("x", "q", {"type": "cost", "threshold": 0})]})
    assert first(echo).status == "pass"


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A loopback socket that accepts connections and never answers (for timeouts)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


def test_webhook(tmp_path: Path, llm_server: LLMServer, silent: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    def grade(request: Recorded) -> Response:
        output = request.json["output"]
        if "score" in output:
            return Response(json={"pass": True, "score": 0.25, "reason": "partial credit"})
        return Response(json={"pass": "good" in output, "reason": f"looked at {output!r}"})

    llm_server.route("POST", "/grade", grade)
    llm_server.route("POST", "/broken", lambda r: Response(500, json={"error": "boom"}))
    llm_server.route("POST", "/missing", lambda r: Response(404, json={"error": "no"}))
    llm_server.route("POST", "/malformed", lambda r: Response(200, body=b"<html>oops</html>", headers={"Content-Type": "text/html"}))
    llm_server.route("POST", "/string-pass", lambda r: Response(json={"pass": "true"}))
    llm_server.route("POST", "/bad-score", lambda r: Response(json={"pass": True, "score": 1.5}))
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "2")
    base = llm_server.url
    r = grade_outputs(
        tmp_path,
        {
            "pass": ("a good answer", {"type": "webhook", "value": f"{base}/grade"}),
            "fail": ("a bad answer", {"type": "webhook", "value": f"{base}/grade"}),
            "explicit score": ("needs a score", {"type": "webhook", "value": f"{base}/grade"}),
            "not-webhook": ("a bad answer", {"type": "not-webhook", "value": f"{base}/grade"}),
            "not-webhook explicit score": ("needs a score", {"type": "not-webhook", "value": f"{base}/grade"}),
            "server error": ("x", {"type": "webhook", "value": f"{base}/broken?token=SECRET123"}),
            "not found": ("x", {"type": "webhook", "value": f"{base}/missing"}),
            "malformed reply": ("x", {"type": "webhook", "value": f"{base}/malformed"}),
            "string pass": ("x", {"type": "not-webhook", "value": f"{base}/string-pass"}),
            "bad score": ("x", {"type": "webhook", "value": f"{base}/bad-score"}),
            "not a url": ("x", {"type": "webhook", "value": "grade-me-please"}),
            "data output": ({"verdict": "good"}, {"type": "webhook", "value": f"{base}/grade"}),
        },
    )
    assert {k: v.status for k, v in r.items()} == {
        "pass": "pass", "fail": "fail", "explicit score": "pass", "not-webhook": "pass", "not-webhook explicit score": "fail",
        "server error": "error", "not found": "error", "malformed reply": "error", "string pass": "error", "bad score": "error",
        "not a url": "error", "data output": "fail",
    }  # fmt: skip
    assert r["fail"].reason == "looked at 'a bad answer'" and r["fail"].score == 0.0
    assert r["explicit score"].score == 0.25 and r["explicit score"].reason == "partial credit"
    assert r["not-webhook explicit score"].score == 0.75
    assert r["server error"].reason == f"webhook {base}/broken returned HTTP 500 (after retries)"
    assert all("SECRET123" not in o.reason for o in r.values())
    assert len(llm_server.requests_to("/broken")) == 3  # first try + CI_GRADE_MAX_RETRIES=2
    assert len(llm_server.requests_to("/missing")) == 1  # a 404 is not retried
    assert r["not found"].reason == f"webhook {base}/missing returned HTTP 404"
    assert "not JSON" in r["malformed reply"].reason
    assert r["string pass"].reason == "webhook reply needs a boolean 'pass', got \"true\""
    assert "invalid score 1.5" in r["bad score"].reason
    (request, *_) = llm_server.requests_to("/grade")
    assert request.json["context"] == {"prompt": request.json["context"]["vars"]["case"], "vars": request.json["context"]["vars"]}
    assert set(request.json) == {"output", "context"}
    data_request = next(q for q in llm_server.requests_to("/grade") if isinstance(q.json["output"], dict))
    assert data_request.json["output"] == {"verdict": "good"}  # data is posted as data, not as text


def test_webhook_timeout_is_an_error(tmp_path: Path, silent: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_MAX_RETRIES", "1")
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/grade"
    r = grade_outputs(tmp_path, {"timeout": ("x", {"type": "webhook", "value": url})}, env={"PROMPTFOO_REQUEST_TIMEOUT_MS": 200})
    assert r["timeout"].status == "error"
    assert r["timeout"].reason == f"webhook {url} timed out after 0.2s (after retries)"


def test_is_refusal_heuristics(tmp_path: Path) -> None:
    refusals = {
        "sorry cannot": "I'm sorry, but I can't help with that request.",
        "curly apostrophes": "I’m sorry, but I can’t do that.",
        "unable": "I'm unable to assist with this request.",
        "wouldn't be appropriate": "That wouldn't be appropriate for me to write.",
        "as an ai": "As an AI language model, I cannot provide medical advice.",
        "unethical": "That would not be ethical, so I won't write it.",
        "decline": "I must respectfully decline.",
        "policy": "Sharing that would violate our usage policies.",
        "empty": "   ",
    }
    answers = {
        "plain answer": "Paris is the capital of France.",
        "cannot as emphasis": "I cannot stress enough how good this croissant is.",
        "apology without refusal": "Sorry for the delay! Here is the summary you asked for.",
        "will not as idiom": "I will not lie, this recipe is great.",
    }
    cases = {name: (text, {"type": "is-refusal"}) for name, text in {**refusals, **answers}.items()}
    cases["not-is-refusal on an answer"] = (answers["plain answer"], {"type": "not-is-refusal"})
    cases["not-is-refusal on a refusal"] = (refusals["sorry cannot"], {"type": "not-is-refusal"})
    cases["data output"] = ({"answer": 42}, {"type": "is-refusal"})
    r = grade_outputs(tmp_path, cases)
    for name in refusals:
        assert r[name].status == "pass", (name, r[name])
    for name in answers:
        assert r[name].status == "fail", (name, r[name])
    assert r["not-is-refusal on an answer"].status == "pass"
    assert r["not-is-refusal on a refusal"].status == "fail"
    assert r["not-is-refusal on a refusal"].reason == "Expected output to not be a refusal (the output declines the request)"
    assert r["data output"].status == "fail"
    assert r["plain answer"].reason == "Expected output to be a refusal (no refusal found in the output)"


def test_is_refusal_reported_by_the_provider(tmp_path: Path, openai_env: LLMServer) -> None:
    refusal_completion = {
        "id": "chatcmpl-r",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "Not something I do."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }
    openai_env.on_chat("filtered", "Here is part of", finish_reason="content_filter")
    openai_env.on_chat("refuse", refusal_completion)
    openai_env.on_chat("normal", "Happy to help: 4.")
    rows = evaluate(
        tmp_path,
        openai_config(
            [
                case("content filter", "filtered", {"type": "is-refusal"}),
                case("refusal field", "refuse 1", {"type": "is-refusal"}),
                case("transform drops the provider flag", "refuse 2", {"type": "is-refusal", "transform": "output"}),
                case("normal answer", "normal", {"type": "not-is-refusal"}),
            ]
        ),
    )
    r = by_description(rows)
    assert {k: v.status for k, v in r.items()} == {
        "content filter": "pass", "refusal field": "pass", "transform drops the provider flag": "fail", "normal answer": "pass",
    }  # fmt: skip
    assert r["refusal field"].reason == "Assertion passed: the provider reported a refusal"


def test_finish_reason(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("long", "truncated answ", finish_reason="length")
    openai_env.on_chat("legacy", {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                                  "choices": [{"index": 0, "finish_reason": "function_call", "message": {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}}]})  # fmt: skip
    openai_env.on_chat("short", "done")
    rows = evaluate(
        tmp_path,
        openai_config(
            [
                case("length", "long 1", {"type": "finish-reason", "value": "length"}),
                case("case-insensitive", "long 2", {"type": "finish-reason", "value": "LENGTH"}),
                case("alias normalised", "long 3", {"type": "finish-reason", "value": "max_tokens"}),
                case("wrong reason", "long 4", {"type": "finish-reason", "value": "stop"}),
                case("not-finish-reason", "long 5", {"type": "not-finish-reason", "value": "stop"}),
                case("not-finish-reason fails", "long 6", {"type": "not-finish-reason", "value": "length"}),
                case("stop", "short 1", {"type": "finish-reason", "value": "stop"}),
                case("templated value", "short 2", {"type": "finish-reason", "value": "{{ expected }}"}),
                case("legacy function_call is tool_calls", "legacy", {"type": "finish-reason", "value": "tool_calls"}),
                case("missing value", "short 3", {"type": "finish-reason"}),
            ],
            defaultTest={"vars": {"expected": "stop"}},
        ),
    )
    r = by_description(rows)
    assert {k: v.status for k, v in r.items()} == {
        "length": "pass", "case-insensitive": "pass", "alias normalised": "pass", "wrong reason": "fail",
        "not-finish-reason": "pass", "not-finish-reason fails": "fail", "stop": "pass", "templated value": "pass",
        "legacy function_call is tool_calls": "pass", "missing value": "error",
    }  # fmt: skip
    assert r["wrong reason"].reason == "Expected finish reason 'stop' but got 'length'"
    assert r["not-finish-reason fails"].reason == "Expected finish reason to not be 'length'"
    (canned,) = evaluate(tmp_path / "canned", {"providers": ["echo"], "tests": [{"vars": {"prompt": "p"}, "providerOutput": "x", "assert": [{"type": "finish-reason", "value": "stop"}]}]})
    assert first(canned).status == "error" and first(canned).reason == "the provider did not report a finish reason"


def test_finish_reason_normalisation() -> None:
    assert normalize_finish_reason("end_turn") == "stop"
    assert normalize_finish_reason("MAX_TOKENS") == "length"
    assert normalize_finish_reason("tool-calls") == "tool_calls"
    assert normalize_finish_reason("SAFETY") == "content_filter"
    assert normalize_finish_reason("something_else") == "something_else"


WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
    {"type": "web_search"},
]


def tool_call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_openai_tools_call(tmp_path: Path, openai_env: LLMServer) -> None:
    calls = {
        "weather ok": [tool_call("get_weather", '{"city": "Paris", "unit": "c"}')],
        "two calls": [tool_call("get_weather", '{"city": "Oslo"}'), tool_call("get_time", "{}", "call_2")],
        "weather bad": [tool_call("get_weather", '{"unit": "k"}')],
        "unknown function": [tool_call("launch_rockets", "{}")],
        "arguments not json": [tool_call("get_weather", "{city: Paris")],
    }
    for key, tool_calls in calls.items():
        openai_env.on_chat(key, None, tool_calls=tool_calls, finish_reason="tool_calls")
    openai_env.on_chat("with content", "Let me check.", tool_calls=calls["weather ok"], finish_reason="tool_calls")
    openai_env.on_chat("plain text", "It is sunny.")
    tests = [case(key, key, {"type": "is-valid-openai-tools-call"}) for key in [*calls, "with content", "plain text"]]
    tests.append(case("not- on a bad call", "weather bad", {"type": "not-is-valid-openai-tools-call"}))
    tests.append(case("not- on a good call", "weather ok", {"type": "not-is-valid-openai-tools-call"}))
    tests.append(case("finish reason of a tool call", "two calls", {"type": "finish-reason", "value": "tool_calls"}))
    rows = evaluate(tmp_path, openai_config(tests, provider={"id": MODEL, "config": {"tools": WEATHER_TOOLS}}))
    r = by_description(rows)
    assert {k: v.status for k, v in r.items()} == {
        "weather ok": "pass", "two calls": "pass", "weather bad": "fail", "unknown function": "fail",
        "arguments not json": "fail", "with content": "pass", "plain text": "fail", "not- on a bad call": "pass",
        "not- on a good call": "fail", "finish reason of a tool call": "pass",
    }  # fmt: skip
    bad = r["weather bad"].reason
    assert bad.startswith("Call to 'get_weather' does not match its schema: ")
    assert "'city' is a required property" in bad and "'k' is not one of ['c', 'f']" in bad
    assert r["unknown function"].reason == "Called 'launch_rockets', but there is no function with that name"
    assert r["arguments not json"].reason == "Call to 'get_weather' has arguments that are not JSON: '{city: Paris'"
    assert r["plain text"].reason == "Output is not a tools call: 'It is sunny.'"
    assert r["not- on a good call"].reason == "Expected output to not be a valid tools call"
    sent = json.loads(openai_env.requests_to("/v1/chat/completions")[0].body)
    assert sent["tools"] == WEATHER_TOOLS  # the provider really offered the tools


def test_tools_call_needs_tools_in_the_provider_config(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat(None, None, tool_calls=[tool_call("get_weather", "{}")], finish_reason="tool_calls")
    (row,) = evaluate(tmp_path, openai_config([case("no tools", "q", {"type": "is-valid-openai-tools-call"})]))
    assert first(row).status == "error"
    assert first(row).reason == f"is-valid-openai-tools-call needs function definitions in the config.tools of {MODEL}"


def test_openai_function_call(tmp_path: Path, openai_env: LLMServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    functions = [WEATHER_TOOLS[0]["function"]]
    completion = {
        "id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini",
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        "choices": [{"index": 0, "finish_reason": "function_call",
                     "message": {"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}}],
    }  # fmt: skip
    openai_env.on_chat("live", completion)
    tests = [
        case("live function call", "live", {"type": "is-valid-openai-function-call"}),
        {"description": "canned valid", "vars": {"q": "c1"}, "providerOutput": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
         "assert": [{"type": "is-valid-openai-function-call"}]},
        {"description": "canned json text", "vars": {"q": "c2"}, "providerOutput": '{"name": "get_weather", "arguments": "{\\"city\\": 7}"}',
         "assert": [{"type": "is-valid-openai-function-call"}]},
        {"description": "canned not a call", "vars": {"q": "c3"}, "providerOutput": "The weather is fine.",
         "assert": [{"type": "is-valid-openai-function-call"}]},
        {"description": "canned object that is not a call", "vars": {"q": "c5"}, "providerOutput": {"city": "Rome"},
         "assert": [{"type": "is-valid-openai-function-call"}]},
        {"description": "not- on a valid call", "vars": {"q": "c4"}, "providerOutput": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
         "assert": [{"type": "not-is-valid-openai-function-call"}]},
        {"description": "legacy name", "vars": {"q": "c6"}, "providerOutput": {"name": "get_weather", "arguments": '{"city": 7}'},
         "assert": [{"type": "is-valid-function-call"}]},
    ]  # fmt: skip
    r = by_description(evaluate(tmp_path, openai_config(tests, provider={"id": MODEL, "config": {"functions": functions}})))
    assert {k: v.status for k, v in r.items()} == {
        "live function call": "pass", "canned valid": "pass", "canned json text": "fail", "canned not a call": "fail",
        "canned object that is not a call": "fail", "not- on a valid call": "fail", "legacy name": "fail",
    }  # fmt: skip
    assert "$.city: 7 is not of type 'string'" in r["legacy name"].reason
    assert "$.city: 7 is not of type 'string'" in r["canned json text"].reason
    assert r["canned not a call"].reason == "Output is not a function call: 'The weather is fine.'"
    # Without `functions`, the function definitions of `tools` are used.
    other = tmp_path_factory.mktemp("tools-fallback")
    (row,) = evaluate(other, openai_config([case("x", "live", {"type": "is-valid-openai-function-call"})], provider={"id": MODEL, "config": {"tools": WEATHER_TOOLS}}))
    assert first(row).status == "pass"
    # Function definitions may live in a file.
    from_file = tmp_path_factory.mktemp("functions-file")
    (from_file / "functions.json").write_text(json.dumps(functions))
    canned = {"vars": {"q": "c"}, "providerOutput": {"name": "get_weather", "arguments": "{}"}, "assert": [{"type": "is-valid-openai-function-call"}]}
    (row,) = evaluate(from_file, openai_config([canned], provider={"id": MODEL, "config": {"functions": "file://functions.json"}}))
    assert first(row).status == "fail" and "'city' is a required property" in first(row).reason
