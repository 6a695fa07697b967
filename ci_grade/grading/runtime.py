"""Assertions about the provider call rather than the text: latency, cost, finish-reason,
is-refusal, OpenAI tool/function calls, and the `webhook` assertion (an external HTTP grader).

What cannot be known is an error, never a pass: a cached response has no latency, a provider
that reports no cost has no cost, a test graded from `providerOutput` made no call at all.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import urlsplit

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import STRING, ValueSpec, assertion

DEFAULT_WEBHOOK_TIMEOUT_MS = 300_000  # promptfoo's PROMPTFOO_REQUEST_TIMEOUT_MS default


def _require_call(ctx: AssertionContext, what: str) -> None:
    if ctx.test.providerOutput is not None:
        raise GraderError(f"{ctx.type}: this test is graded from providerOutput, so no provider call was made and there is no {what}")


def _metric_only(ctx: AssertionContext, value: float, what: str) -> Grade:
    """No threshold: record `value` as a named metric (needs `metric` and `weight: 0`)."""
    if ctx.inverse:
        raise GraderError(f"{ctx.type} needs a threshold")
    if not ctx.assertion.metric or ctx.assertion.effective_weight != 0:
        raise GraderError(
            f"{ctx.type} needs a threshold; to record the {what} as a metric instead, set `metric` and `weight: 0`"
        )
    return Grade(True, value, f"Recorded {what} {value:g}")


def _limit(ctx: AssertionContext, value: float, what: str, unit: str) -> Grade:
    assert ctx.threshold is not None
    within = value <= ctx.threshold
    if within != ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    relation = "less than or equal to" if within else "greater than"
    return Grade(False, 0.0, f"{what} {value:g}{unit} is {relation} threshold {ctx.threshold:g}{unit}")


@assertion("latency", handles_inverse=True, csv_threshold=0.75, reproducible=False)
async def latency(ctx: AssertionContext) -> Grade:
    _require_call(ctx, "latency")
    if ctx.response.cached:
        raise GraderError("latency cannot be checked on a cached response; rerun without the cache (--no-cache)")
    latency_ms = float(ctx.response.latency_ms)
    if ctx.threshold is None:
        return _metric_only(ctx, latency_ms, "latency (ms)")
    return _limit(ctx, latency_ms, "Latency", "ms")


@assertion("cost", handles_inverse=True, csv_threshold=0.75)
async def cost(ctx: AssertionContext) -> Grade:
    _require_call(ctx, "cost")
    value = ctx.response.cost
    if value is None:
        provider = ctx.provider.id if ctx.provider else "the provider"
        raise GraderError(f"cost is unknown: {provider} did not report one (set config.cost, or inputCost/outputCost)")
    if not math.isfinite(value) or value < 0:
        raise GraderError(f"cost reported by the provider is not a valid amount: {value!r}")
    if ctx.threshold is None:
        return _metric_only(ctx, float(value), "cost (USD)")
    return _limit(ctx, float(value), "Cost", "")


# -- finish reason ----------------------------------------------------------------------------

_FINISH_ALIASES = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "complete": "stop",
    "completed": "stop",
    "finished": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_length": "length",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "refusal": "content_filter",
    "recitation": "content_filter",
    "prohibited_content": "content_filter",
    "blocklist": "content_filter",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
}


def normalize_finish_reason(reason: str) -> str:
    """Provider-specific finish reasons -> stop, length, content_filter or tool_calls (others as given)."""
    key = re.sub(r"[\s\-]+", "_", reason.strip().lower())
    return _FINISH_ALIASES.get(key, key)


@assertion("finish-reason", handles_inverse=True, value=ValueSpec("{type} needs a value: stop, length, content_filter or tool_calls", STRING))
async def finish_reason(ctx: AssertionContext) -> Grade:
    expected = ctx.value
    actual = ctx.response.finish_reason
    if not actual:
        raise GraderError("the provider did not report a finish reason")
    same = normalize_finish_reason(expected) == normalize_finish_reason(actual)
    if same != ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    if ctx.inverse:
        return Grade(False, 0.0, f"Expected finish reason to not be {expected!r}")
    return Grade(False, 0.0, f"Expected finish reason {expected!r} but got {actual!r}")


# -- refusals -----------------------------------------------------------------------------------

_CANNOT = r"(?:cannot|can't|can not|won't|will not)"
_REFUSALS = [
    re.compile(pattern, re.I)
    for pattern in (
        rf"\bI(?:'m| am)\s+(?:sorry|afraid)\b[^.!?\n]{{0,80}}\b(?:{_CANNOT}|unable|not able)\b",
        rf"\bI(?:\s+(?:{_CANNOT}|am unable to|am not able to|must decline to|have to decline to)|'m (?:unable|not able) to)\s+"
        r"(?:help|assist|provide|comply|fulfil+|do (?:that|this)|create|generate|write|support|engage|share|answer|give|produce|participate)",
        r"\bI\s+(?:must|have to|need to)\s+(?:respectfully\s+)?(?:decline|refuse)\b",
        rf"\bAs an AI(?: language model| assistant| model)?,? I(?: (?:{_CANNOT}|don't|do not|am not)|'m not)\b",
        r"\b(?:that|this|it) (?:would not|wouldn't|is not|isn't|could not|couldn't) be (?:ethical|appropriate|legal|safe|responsible)\b",
        r"\b(?:that|this|it) (?:would be|is) (?:unethical|inappropriate|illegal|harmful)\b",
        r"\bagainst (?:my|our|the) (?:guidelines|policies|policy|programming|principles|usage policies|content policy)\b",
        r"\b(?:violates?|violation of) (?:my|our|the) (?:guidelines|policies|content policy|usage policies|terms)\b",
        r"\bI(?:'m| am) not (?:able|allowed|permitted) to (?:help|assist|provide|share|discuss)\b",
    )
]


def looks_like_refusal(text: str) -> bool:
    """Heuristic: does the text decline the request ("I can't help with that", "As an AI, I cannot...")?"""
    text = text.replace("\u2019", "'")
    return any(pattern.search(text) for pattern in _REFUSALS)


def _transformed(ctx: AssertionContext) -> bool:
    provider_transform = ctx.provider.transform if ctx.provider else None
    return bool(ctx.assertion.transform or provider_transform or ctx.test.options.output_transform)


@assertion("is-refusal", handles_inverse=True)
async def is_refusal(ctx: AssertionContext) -> Grade:
    if not _transformed(ctx) and (ctx.response.is_refusal or normalize_finish_reason(ctx.response.finish_reason or "") == "content_filter"):
        refused, why = True, "the provider reported a refusal"
    elif not isinstance(ctx.output, str):
        refused, why = False, "the output is data, not a refusal"
    elif not ctx.output.strip():
        refused, why = True, "an empty response counts as a refusal"
    else:
        refused = looks_like_refusal(ctx.output)
        why = "the output declines the request" if refused else "no refusal found in the output"
    if refused != ctx.inverse:
        return Grade(True, 1.0, f"Assertion passed: {why}")
    return Grade(False, 0.0, f"Expected output to {'not ' if ctx.inverse else ''}be a refusal ({why})")


# -- OpenAI tool and function calls -------------------------------------------------------------


def extract_calls(output: Any) -> list[dict[str, Any]] | None:
    """The function calls in an output, as `{name, arguments}` dicts; None if it holds none.

    Accepts what the OpenAI provider returns: a list of tool calls (`{id, type, function}`), a
    message with `tool_calls` or `function_call`, a bare `{name, arguments}`, or their JSON text;
    and Gemini's: parts with `functionCall`, or the Live API's `{toolCall: {functionCalls}}`
    (`args` read as the arguments).
    """
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return None
    gemini = _gemini_calls(output)
    if gemini is not None:
        return gemini or None
    if isinstance(output, dict):
        if isinstance(output.get("tool_calls"), list):
            output = output["tool_calls"]
        elif isinstance(output.get("function_call"), dict):
            output = [output["function_call"]]
        else:
            output = [output]
    if not isinstance(output, list) or not output:
        return None
    calls = []
    for item in output:
        call = item.get("function") if isinstance(item, dict) and isinstance(item.get("function"), dict) else item
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or "arguments" not in call:
            return None
        calls.append(call)
    return calls


def _gemini_calls(output: Any) -> list[dict[str, Any]] | None:
    """Gemini's function calls as `{name, arguments}`; None when the output is not in its shapes."""
    if isinstance(output, dict) and isinstance(output.get("toolCall"), dict):
        found = output["toolCall"].get("functionCalls")
    elif isinstance(output, list) and output and all(isinstance(p, dict) for p in output) and any("functionCall" in p for p in output):
        found = [p["functionCall"] for p in output if "functionCall" in p]
    else:
        return None
    if not isinstance(found, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in found):
        return None
    return [{"name": c["name"], "arguments": c.get("args") or {}} for c in found]


def _lower_types(schema: Any) -> Any:
    """A Gemini schema (`type: OBJECT`) as JSON Schema (`type: object`)."""
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}


def function_schemas(ctx: AssertionContext, key: str) -> dict[str, Any]:
    """name -> parameters schema, from the provider's `config.functions` or `config.tools`.

    (`file://` references in provider config are loaded by the config loader.)
    """
    config = ctx.provider.config if ctx.provider else {}
    declared = config.get(key)
    if declared is None and key == "functions":
        declared, key = config.get("tools"), "tools"
    if not isinstance(declared, list) or not declared:
        provider = ctx.provider.id if ctx.provider else "the provider"
        raise GraderError(f"{ctx.type} needs function definitions in the config.{key} of {provider}")
    schemas: dict[str, Any] = {}
    items = list(declared)
    for item in items:  # grows by Gemini's declarations as they are met
        function = item.get("function") if isinstance(item, dict) and "function" in item else item
        if isinstance(item, dict) and isinstance(item.get("functionDeclarations"), list):  # Gemini's tools
            items += [{"name": d.get("name"), "parameters": _lower_types(d.get("parameters"))} for d in item["functionDeclarations"] if isinstance(d, dict)]
            continue
        if isinstance(item, dict) and (item.get("type", "function") != "function" or not {"name", "function", "type"} & item.keys()):
            continue  # web search, code execution, MCP and other built-in tools have no argument schema
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise GraderError(f"config.{key} has an entry without a function name: {json.dumps(item)[:120]}")
        schemas[function["name"]] = function.get("parameters")
    return schemas


def call_problems(calls: list[dict[str, Any]], schemas: dict[str, Any]) -> list[str]:
    """Why calls do not match their functions: unknown names, non-JSON arguments, schema errors."""
    from ci_grade.grading.structured.json import parse_json
    from ci_grade.grading.structured.json_schema import schema_errors, schema_validator

    problems = []
    for call in calls:
        name = call["name"]
        if name not in schemas:
            problems.append(f"Called {name!r}, but there is no function with that name")
            continue
        arguments = call["arguments"]
        if isinstance(arguments, str):
            ok, arguments = parse_json(arguments) if arguments.strip() else (True, {})
            if not ok:
                problems.append(f"Call to {name!r} has arguments that are not JSON: {call['arguments'][:100]!r}")
                continue
        schema = schemas[name]
        if schema is None:
            continue
        errors = schema_errors(schema_validator(schema, f"parameters schema of {name!r}"), arguments)
        if errors:
            problems.append(f"Call to {name!r} does not match its schema: {'; '.join(errors[:3])}")
    return problems


async def _validate_calls(ctx: AssertionContext, key: str, kind: str) -> Grade:
    schemas = function_schemas(ctx, key)
    calls = extract_calls(ctx.output)
    if calls is None:
        problems = [f"Output is not a {kind}: {ctx.output_text[:200]!r}"]
    else:
        problems = call_problems(calls, schemas)
    valid = not problems
    if valid != ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    return Grade(False, 0.0, f"Expected output to not be a valid {kind}" if ctx.inverse else "; ".join(problems))


@assertion("is-valid-openai-tools-call", handles_inverse=True)
async def is_valid_openai_tools_call(ctx: AssertionContext) -> Grade:
    return await _validate_calls(ctx, "tools", "tools call")


@assertion("is-valid-openai-function-call", aliases=("is-valid-function-call",), handles_inverse=True)
async def is_valid_openai_function_call(ctx: AssertionContext) -> Grade:
    return await _validate_calls(ctx, "functions", "function call")


# -- webhook ------------------------------------------------------------------------------------


def _display_url(url: str) -> str:
    """The URL without credentials or query (which may carry tokens)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


def _timeout_seconds(ctx: AssertionContext) -> float:
    raw = ctx.run.env.get("PROMPTFOO_REQUEST_TIMEOUT_MS")
    try:
        return float(raw) / 1000 if raw else DEFAULT_WEBHOOK_TIMEOUT_MS / 1000
    except ValueError:
        raise GraderError(f"PROMPTFOO_REQUEST_TIMEOUT_MS must be a number of milliseconds, got {raw!r}") from None


async def post_webhook(url: str, payload: dict[str, Any], timeout: float) -> Any:
    """POST JSON and return the decoded JSON reply; transient failures are retried, then errors."""
    import httpx

    from ci_grade.errors import TransientError
    from ci_grade.providers.retry import RETRYABLE_STATUS, retry_after_seconds, with_retries

    shown = _display_url(url)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:

        async def attempt() -> Any:
            try:
                response = await client.post(url, json=payload)
            except httpx.TimeoutException:
                raise TransientError(f"webhook {shown} timed out after {timeout:g}s", timeout=True) from None
            except httpx.TransportError as exc:
                raise TransientError(f"webhook {shown} is unreachable: {type(exc).__name__}") from None
            if response.status_code in RETRYABLE_STATUS:
                raise TransientError(f"webhook {shown} returned HTTP {response.status_code}", retry_after_seconds(dict(response.headers)))
            if not response.is_success:
                raise GraderError(f"webhook {shown} returned HTTP {response.status_code}")
            try:
                return json.loads(response.text)
            except ValueError:
                raise TransientError(f"webhook {shown} replied with something that is not JSON: {response.text[:100]!r}") from None

        try:
            return await with_retries(attempt, timeout=timeout, what=f"webhook {shown}")
        except TransientError as exc:
            raise GraderError(f"{exc} (after retries)") from None


@assertion("webhook", handles_inverse=True, reproducible=False)
async def webhook(ctx: AssertionContext) -> Grade:
    url = ctx.value
    if not isinstance(url, str) or not re.match(r"https?://[^\s/]", url.strip()):
        raise GraderError(f"webhook needs an http(s) URL as its value, got {url!r}")
    payload = {"output": ctx.output, "context": {"prompt": ctx.prompt, "vars": ctx.vars}}
    reply = await post_webhook(url.strip(), payload, _timeout_seconds(ctx))
    if not isinstance(reply, dict) or not isinstance(reply.get("pass"), bool):
        got = reply.get("pass") if isinstance(reply, dict) else reply
        raise GraderError(f"webhook reply needs a boolean 'pass', got {json.dumps(got)[:100]}")
    score = reply.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1):
        raise GraderError(f"webhook reply has an invalid score {json.dumps(score)[:60]} (expected a number from 0 to 1)")
    passed = reply["pass"] != ctx.inverse
    explicit = None if score is None else float(score)
    final = (1.0 if passed else 0.0) if explicit is None else (1.0 - explicit if ctx.inverse else explicit)
    reason = reply.get("reason")
    if not isinstance(reason, str) or not reason:
        reason = "Assertion passed" if passed else f"Webhook returned pass: {str(reply['pass']).lower()}"
    return Grade(passed, final, reason)
