"""Reading the OpenAI API's replies: what a call gets back, or the TransientError that asks again.

A reply that is empty, not JSON or lacks what the call needs (choices, an output list, an
embedding, moderation results) is retried; token usage is read from a JSON body or an SDK
object; an API error becomes one line for the report.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from ci_grade.errors import TransientError
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
    return f"API error {exc.status_code}: {detail or exc.message}"
