"""Reading the OpenAI API's replies: what a call gets back, or the TransientError that asks again.

A reply that is empty, not JSON or lacks what the call needs (choices, an output list, an
embedding, moderation results) is retried; token usage is read from a JSON body or an SDK
object; an API error becomes one line for the report. A 429 says how long to wait in more places
than `Retry-After` (`rate_limit_wait`), and one for an exhausted quota or credit is not a rate
limit at all (`quota_exhausted`): retrying cannot help it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from ci_grade.errors import TransientError
from ci_grade.providers.base import ProviderResponse
from ci_grade.providers.retry import retry_after_seconds
from ci_grade.results.usage import TokenUsage

T = TypeVar("T")


def completion_body(body: bytes) -> dict[str, Any]:
    """A Chat Completions body read as UTF-8 (JSON's encoding; bytes that are not UTF-8 become
    U+FFFD, as the HTTP client's text would have them); one that is empty, not JSON or without
    choices is retried."""
    text = body.decode("utf-8", "replace")
    if not text.strip():
        raise TransientError("API returned an empty body")
    try:
        completion = json.loads(text)
    except ValueError:
        raise TransientError(f"API returned a body that is not JSON: {text[:120]!r}") from None
    if not isinstance(completion, dict) or not completion.get("choices") or not isinstance(completion["choices"][0], dict):
        raise TransientError(f"API returned no choices: {str(completion)[:200]}")
    return completion


def present(result: T) -> T:
    """An SDK reply as it is (the SDK checked its shape), unless the body was not a JSON object."""
    if isinstance(result, str | type(None)):
        raise TransientError(f"API returned a body that is not a JSON object: {str(result)[:120]!r}")
    return result


def with_output(result: Any) -> Any:
    if not isinstance(getattr(present(result), "output", None), list):
        raise TransientError("API returned no output list")
    return result


def with_embedding(result: Any) -> Any:
    if not getattr(present(result), "data", None):
        raise TransientError("API returned no embedding")
    return result


def with_moderation_results(result: Any) -> Any:
    """A moderation reply must hold results: without them nothing was checked (never "no flags")."""
    if not getattr(present(result), "results", None):
        raise TransientError("API returned no moderation results")
    return result


def usage_of(usage: Any) -> TokenUsage:
    """Usage from a JSON body (dict) or an SDK object."""
    if usage is None:
        return TokenUsage(num_requests=1)

    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    details = field(usage, "completion_tokens_details")
    prompt_details = field(usage, "prompt_tokens_details")
    return TokenUsage.of(
        field(usage, "prompt_tokens"),
        field(usage, "completion_tokens"),
        field(usage, "total_tokens"),
        cached=field(prompt_details, "cached_tokens") if prompt_details else 0,
        reasoning=field(details, "reasoning_tokens") if details else 0,
    )


def error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    detail = None
    if isinstance(body, dict):
        error = body.get("error", body)
        detail = error.get("message") if isinstance(error, dict) else str(error)
    elif isinstance(body, str) and body:  # the SDK passes on a string `error` (xAI's replies) as the body
        detail = body
    return f"API error {exc.status_code}: {detail or exc.message}"


_TRY_AGAIN = re.compile(r"try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)", re.I)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "credit_balance_exhausted"})


def duration_seconds(text: str) -> float | None:
    """OpenAI's durations ("6m0s", "1s", "120ms", "1h2m3.5s") in seconds; None if not one."""
    parts = _DURATION_PART.findall(text.strip())
    if not parts or "".join(number + unit for number, unit in parts) != text.strip():
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def rate_limit_wait(headers: Mapping[str, str], message: str) -> float | None:
    """How long a 429 asks to wait: `Retry-After` (or `retry-after-ms`); else the message's "try
    again in 6s"; else the reset of the limit that ran out (`x-ratelimit-reset-requests` or
    `-tokens` where its `remaining` is 0; Azure's `x-rate-limit-reset-tokens`, in seconds)."""
    asked = retry_after_seconds(headers)
    if asked is not None:
        return asked
    if found := _TRY_AGAIN.search(message):
        return duration_seconds(found[1])
    lowered = {name.lower(): value for name, value in headers.items()}
    waits = [
        wait
        for kind in ("requests", "tokens")
        if lowered.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0"
        and (wait := duration_seconds(lowered.get(f"x-ratelimit-reset-{kind}", ""))) is not None
    ]
    try:
        waits.append(float(lowered["x-rate-limit-reset-tokens"]))
    except (KeyError, ValueError):
        pass
    return max(waits) if waits else None


def quota_exhausted(exc: Any) -> bool:
    """A 429 for an exhausted quota, credit or spend limit (OpenAI's `insufficient_quota`), which
    no retry fixes, unlike a rate limit."""
    codes = {str(getattr(exc, "type", None) or ""), str(getattr(exc, "code", None) or "")}
    return bool(codes & QUOTA_CODES) or any(code.endswith("_spend_limit_exceeded") for code in codes)


def responses_reply(result: Any, response_format: Any = None) -> ProviderResponse:
    """A Responses API reply (an SDK `Response`) as ci-grade's response, without its cost: the
    output text (else its function calls), a refusal, the token usage (cached input tokens
    included), web search calls and URL citations; a `json_schema` reply is read as its data."""
    input_details = getattr(result.usage, "input_tokens_details", None)
    usage = TokenUsage.of(
        getattr(result.usage, "input_tokens", 0) if result.usage else 0,
        getattr(result.usage, "output_tokens", 0) if result.usage else 0,
        getattr(result.usage, "total_tokens", None) if result.usage else None,
        cached=getattr(input_details, "cached_tokens", 0),
    )
    output: Any = getattr(result, "output_text", "") or ""
    refusal = None
    calls = []
    searches = 0
    sources: list[dict[str, Any]] = []
    for item in result.output:
        kind = getattr(item, "type", None)
        if kind == "function_call":
            calls.append(item.model_dump(exclude_none=True))
        elif kind == "web_search_call":
            searches += 1
        for part in getattr(item, "content", None) or []:
            if getattr(part, "type", None) == "refusal":
                refusal = getattr(part, "refusal", None)
            for note in getattr(part, "annotations", None) or []:
                if getattr(note, "type", None) == "url_citation":
                    sources.append({"url": getattr(note, "url", None), "title": getattr(note, "title", None)})
    metadata: dict[str, Any] = {"webSearchCalls": searches, "searchResults": sources} if searches or sources else {}
    if refusal:
        return ProviderResponse(output=refusal, is_refusal=True, token_usage=usage)
    if not output and calls:
        output = calls
    if isinstance(output, str) and isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        try:  # as promptfoo reads a json_schema reply: as its data
            output = json.loads(output)
        except ValueError:
            pass
    status = getattr(result, "status", None)
    finish = "length" if status == "incomplete" else ("tool_calls" if calls else "stop")
    return ProviderResponse(output=output, token_usage=usage, finish_reason=finish, metadata=metadata)
