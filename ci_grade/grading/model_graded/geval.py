"""`g-eval`: generated evaluation steps, then a 0-10 evaluation, per criterion.

For each criterion two grader calls run in order: one writes the evaluation steps
(`{"steps": [...]}`), one scores the reply by following them (`{"score": 0..10, "reason"}`).
The score is `raw / 10`; a list of criteria averages. PASS when the score reaches `threshold`
(default 0.7); `not-` flips the verdict and reports `1 - score`. A `rubricPrompt` must be the
`{steps, evaluate}` form; at test level any other form is meant for other assertions and is
ignored (as promptfoo does), on the assertion itself it is an error.
"""

from __future__ import annotations

from typing import Any

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.registry import LIST, STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import extract, parse_number


def criteria_of(value: Any) -> list[str]:
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return value
    raise GraderError("g-eval needs a criterion: a non-empty string or a non-empty list of strings")


def overrides(ctx: AssertionContext) -> dict[str, Any]:
    """The `{steps, evaluate}` rubricPrompt that applies (empty for the built-in prompts)."""
    own = ctx.assertion.rubricPrompt
    if own not in (None, "", {}, []):
        if not isinstance(own, dict) or not set(own) & {"steps", "evaluate"} or set(own) - {"steps", "evaluate"}:
            raise GraderError("g-eval's rubricPrompt must be a mapping with 'steps' and/or 'evaluate' prompts")
        return own
    inherited = ctx.test.options.rubricPrompt
    if isinstance(inherited, dict) and set(inherited) & {"steps", "evaluate"}:
        return inherited
    return {}


def parse_steps(reply: Any) -> list[str]:
    steps = extract(reply, "steps").get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) and s.strip() for s in steps):
        raise VerdictError(f"grader's 'steps' must be a non-empty list of texts, got {excerpt(steps, 200)}", VerdictProblem.INVALID)
    return [s.strip() for s in steps]


def parse_evaluation(reply: Any, scale: float) -> tuple[float, str]:
    """(score on the grader's 0..scale range, reason) from an evaluation reply."""
    verdict = extract(reply, "score")
    raw = parse_number(verdict.get("score"))
    if raw is None or not 0 <= raw <= scale:
        raise VerdictError(f"grader's 'score' must be a number from 0 to {scale:g}, got {verdict.get('score')!r}", VerdictProblem.INVALID)
    reason = verdict.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise VerdictError(f"grader's 'reason' must be a non-empty text, got {excerpt(reason, 200)}", VerdictProblem.INVALID)
    return raw, reason.strip()


async def grade_criterion(ctx: AssertionContext, grader: GraderSession, criterion: str, custom: dict[str, Any]) -> tuple[float, str, list[str]]:
    """(score 0..1, reason, steps) for one criterion: the steps call, then the evaluation call."""
    scale = grader.scoring("g-eval-evaluate").scale
    steps_prompt, steps_schema = grader.prompt("g-eval-steps", {"criteria": criterion}, override=custom.get("steps"), inherit=False)
    steps = await grader.read(steps_prompt, parse_steps, schema=steps_schema, what="g-eval steps", prefix="g-eval steps: ")
    variables = {
        "criteria": criterion,
        "steps": "\n- ".join(steps),
        "maxScore": f"{scale:g}",
        "input": try_parse(ctx.prompt),
        "output": try_parse(ctx.output_text),
    }
    builtin = {"input_block": fence(ctx.prompt, "source"), "output_block": fence(ctx.output_text, "reply")}
    prompt, schema = grader.prompt("g-eval-evaluate", variables, builtin, override=custom.get("evaluate"), inherit=False)
    raw, reason = await grader.read(prompt, lambda reply: parse_evaluation(reply, scale), schema=schema, what="g-eval evaluation", prefix="g-eval evaluation: ")
    return raw / scale, reason, steps


@assertion(
    "g-eval", grader="text", prompt="g-eval-evaluate", default_threshold=0.7,
    value=ValueSpec("{type} needs a criterion: a non-empty string or a non-empty list of strings", (*STRING, *LIST)),
)
async def g_eval(ctx: AssertionContext, grader: GraderSession) -> Measure:
    criteria = criteria_of(ctx.value)
    if not ctx.prompt.strip():
        raise GraderError("g-eval needs the prompt (the source text the reply answers), but the rendered prompt is empty")
    custom = overrides(ctx)
    scores: list[float] = []
    reasons: list[str] = []
    details: list[dict[str, Any]] = []
    for index, criterion in enumerate(criteria, 1):
        try:
            score, reason, steps = await grade_criterion(ctx, grader, criterion, custom)
        except GraderError as exc:
            if len(criteria) == 1:
                raise
            raise grader.error(f"g-eval criterion {index}/{len(criteria)} ({excerpt(criterion, 80)!r}) failed: {exc.reason}", exc.metadata) from None
        scores.append(score)
        reasons.append(reason)
        details.append({"criterion": criterion, "score": score, "steps": steps, "reason": reason})
    return Measure(sum(scores) / len(scores), "\n\n".join(reasons), metadata={"criteria": details, "threshold": ctx.effective_threshold})
