"""`perplexity` and `perplexity-score`: how surprised the model was by its own output.

Both read the output's token log probabilities (OpenAI chat models return them: ci-grade asks
for them when a test has one of these assertions). perplexity = exp(-mean logprob), passing at
<= threshold; perplexity-score = 1 / (1 + exp(-mean logprob)), passing at >= threshold. Without a
threshold both pass, as in promptfoo. A provider that returns no log probabilities is an ERROR.
"""

from __future__ import annotations

import math

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.js_values import js_fixed
from ci_grade.templating.nunjucks import js_string


def _mean_logprob(ctx: AssertionContext, label: str) -> float:
    logprobs = ctx.response.logprobs
    if not logprobs:
        raise GraderError(f"{label} assertion does not support providers that do not return logProbs")
    return sum(logprobs) / len(logprobs)


@assertion("perplexity", handles_inverse=True, reproducible=False)
async def perplexity(ctx: AssertionContext) -> Grade:
    value = math.exp(-_mean_logprob(ctx, "Perplexity"))
    threshold = ctx.threshold
    passed = True if threshold is None else (value <= threshold) != ctx.inverse
    relation = "less than or equal to" if ctx.inverse else "greater than"
    reason = "Assertion passed" if passed else f"Perplexity {js_fixed(value, 2)} is {relation} threshold {js_string(threshold)}"
    return Grade(passed, 1.0 if passed else 0.0, reason)


@assertion("perplexity-score", handles_inverse=True, reproducible=False)
async def perplexity_score(ctx: AssertionContext) -> Grade:
    value = 1 / (1 + math.exp(-_mean_logprob(ctx, "perplexity-score")))
    threshold = ctx.threshold
    passed = True if threshold is None else (value >= threshold) != ctx.inverse
    relation = "greater than or equal to" if ctx.inverse else "less than"
    reason = "Assertion passed" if passed else f"Perplexity score {js_fixed(value, 2)} is {relation} threshold {js_string(threshold)}"
    return Grade(passed, 1.0 - value if ctx.inverse else value, reason)
