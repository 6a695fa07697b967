"""`pi`: the With Pi scoring API rates the output against a question (`value`).

One POST to `{WITHPI_API_BASE_URL or https://api.withpi.ai/v1}/scoring_system/score` with
`{llm_input: prompt, llm_output: output, scoring_spec: [{question: value}]}` and the key from
`WITHPI_API_KEY` in the `x-api-key` header; 429/5xx/timeouts and bodies that are not JSON are
retried (honouring `Retry-After`). The score is Pi's `total_score` on Pi's own scale; it passes when strictly
greater than the threshold (default 0.5). `question_scores` become named scores. Unlike
promptfoo, `not-pi` is honoured: it passes when the score is not above the threshold, with
`1 - score`.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from ci_grade.errors import GraderError, TransientError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.scoring import shown
from ci_grade.grading.session import Tally
from ci_grade.providers.http_api import error_detail, excerpt
from ci_grade.providers.retry import (
    RETRYABLE_STATUS,
    RetryPolicy,
    call_timeout,
    retry_after_seconds,
    with_retries,
)

if TYPE_CHECKING:
    import httpx  # imported on first use

DEFAULT_BASE_URL = "https://api.withpi.ai/v1"
GRADER = "withpi:scoring_system"


def _message(response: httpx.Response) -> str:
    try:
        detail = error_detail(response.json())
    except ValueError:
        detail = None
    return f"Pi scoring API error {response.status_code}: {detail or excerpt(response.text, 200) or response.reason_phrase}"


async def score_with_pi(url: str, api_key: str, body: dict[str, Any]) -> Any:
    """POST with retries; returns the parsed JSON reply or raises GraderError with the reason."""
    import httpx

    policy = RetryPolicy.from_env()
    timeout = call_timeout({})
    async with httpx.AsyncClient(timeout=timeout) as client:

        async def attempt() -> Any:
            try:
                response = await client.post(url, json=body, headers={"x-api-key": api_key})
            except httpx.TimeoutException:
                raise TransientError(f"Pi scoring API timed out after {timeout:g}s", timeout=True) from None
            except httpx.TransportError as exc:
                raise TransientError(f"Pi scoring API unreachable: {type(exc).__name__}: {exc}") from None
            if response.status_code in RETRYABLE_STATUS:
                raise TransientError(_message(response), retry_after_seconds(response.headers))
            if not response.is_success:
                raise GraderError(_message(response))
            try:
                return json.loads(response.text)
            except ValueError:
                raise TransientError(f"Pi scoring API returned a body that is not JSON: {excerpt(response.text, 120)!r}") from None

        try:
            return await with_retries(attempt, policy, timeout, what="Pi scoring API")
        except TransientError as exc:
            raise GraderError(f"{exc} (gave up after {policy.attempts} attempts)") from None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


@assertion("pi", handles_inverse=True, model_graded=True, default_threshold=0.5, value=ValueSpec("{type} needs a value: the question to score the output against", STRING))
async def pi(ctx: AssertionContext) -> Grade:
    question = ctx.value
    api_key = ctx.run.env.get("WITHPI_API_KEY")
    if not api_key:
        raise GraderError("pi needs a With Pi API key: set WITHPI_API_KEY")
    base = (ctx.run.env.get("WITHPI_API_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    body = {"llm_input": ctx.prompt, "llm_output": ctx.output_text, "scoring_spec": [{"question": question}]}
    tally = Tally()
    tally.add(None, None, GRADER)
    try:
        reply = await score_with_pi(f"{base}/scoring_system/score", api_key, body)
    except GraderError as exc:
        raise tally.error(exc.reason) from None
    total = _number(reply.get("total_score")) if isinstance(reply, dict) else None
    if total is None:
        raise tally.error(f"Pi scoring API reply has no numeric total_score: {excerpt(str(reply), 200)}")
    raw_named = reply.get("question_scores") or {}
    named = {str(k): v for k, v in raw_named.items() if _number(v) is not None} if isinstance(raw_named, dict) else {}
    threshold = ctx.effective_threshold
    assert threshold is not None
    above = total > threshold
    reason = f"Pi score {total:.2f} is {'above' if above else 'not above'} threshold {shown(threshold)}"
    passed, score = (not above, 1.0 - total) if ctx.inverse else (above, total)
    return tally.grade(passed, score, reason, named_scores={k: float(v) for k, v in named.items()}, metadata={"totalScore": total, "questionScores": named})
