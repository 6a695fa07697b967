"""promptfoo's ProviderResponse as a plain dict (from Python providers and HTTP transforms) -> ProviderResponse.

Keys: `output`, `error`, `tokenUsage`, `cost`, `metadata`, `cached`, `finishReason`, `isRefusal`,
`guardrails`, `logProbs`;
snake_case spellings are accepted too. An `error` wins over an output; the output must be JSON
data, so it can be written to results files.
"""

from __future__ import annotations

import json
from typing import Any

from ci_grade.providers.base import ProviderResponse
from ci_grade.results.usage import TokenUsage


def response_from_dict(result: dict[str, Any], source: str) -> ProviderResponse:
    """Convert `result`; `source` names where it came from in error messages."""
    error = result.get("error")
    if error:
        return ProviderResponse(error=str(error), metadata=_dict(result.get("metadata")))
    if "output" not in result:
        keys = ", ".join(sorted(map(str, result))) or "none"
        return ProviderResponse(error=f"{source} returned a dict with neither 'output' nor 'error' (keys: {keys})")
    output = result["output"]
    try:
        json.dumps(output)
    except (TypeError, ValueError) as exc:
        return ProviderResponse(error=f"{source} returned an output that is not JSON data: {exc}")
    cost = _pick(result, "cost")
    guardrails, logprobs = result.get("guardrails"), _pick(result, "logProbs", "logprobs")
    return ProviderResponse(
        output=output,
        token_usage=token_usage(_pick(result, "tokenUsage", "token_usage")),
        cost=float(cost) if isinstance(cost, int | float) else None,
        cached=bool(result.get("cached")),
        finish_reason=_pick(result, "finishReason", "finish_reason"),
        is_refusal=bool(_pick(result, "isRefusal", "is_refusal")),
        metadata=_dict(result.get("metadata")),
        guardrails=guardrails if isinstance(guardrails, dict) else None,
        logprobs=[float(p) for p in logprobs] if isinstance(logprobs, list) and all(_number(p) for p in logprobs) else None,
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def token_usage(value: Any) -> TokenUsage:
    """promptfoo's tokenUsage dict (camelCase or snake_case) as TokenUsage; one request if absent."""
    if not isinstance(value, dict):
        return TokenUsage(num_requests=1)

    def number(*names: str) -> int:
        found = _pick(value, *names)
        return int(found) if isinstance(found, int | float) else 0

    details = value.get("completionDetails") or value.get("completion_details") or {}
    reasoning = details.get("reasoning") if isinstance(details, dict) else None
    total = _pick(value, "total", "total_tokens")
    return TokenUsage.of(
        number("prompt", "prompt_tokens"),
        number("completion", "completion_tokens"),
        int(total) if isinstance(total, int | float) else None,
        cached=number("cached"),
        reasoning=int(reasoning) if isinstance(reasoning, int | float) else 0,
        requests=number("numRequests", "num_requests") or 1,
    )


def _pick(result: dict[str, Any], *names: str) -> Any:
    return next((result[n] for n in names if result.get(n) is not None), None)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
