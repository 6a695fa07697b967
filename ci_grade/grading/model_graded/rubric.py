"""`llm-rubric`: one grader call judging the output against a free-form rubric.

Pass and score follow promptfoo: without a threshold the grader's `pass` decides (true when the
grader omits it); with a threshold, `pass` must be true AND `score >= threshold`. `not-` flips
pass and uses `1 - score` (clamped to 0..1). Unlike promptfoo, a reply without a usable verdict,
with conflicting verdicts, or with an unrecognisable `pass`/`score` is a grader ERROR.
"""

from __future__ import annotations

import json
from typing import Any

from ci_grade.errors import GraderError, VerdictError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.model_graded.common import Tally, ask, excerpt, grader_prompt
from ci_grade.grading.registry import assertion
from ci_grade.grading.verdicts import extract, parse_bool, parse_number


def grader_guidance(ctx: AssertionContext) -> tuple[str | None, list[dict[str, Any]]]:
    """`graderGuidance` and `graderExamples` from the assertion, its config, or the test options."""
    sources = [ctx.assertion.model_extra or {}, ctx.config, ctx.test.options.model_extra or {}]
    guidance = next((s["graderGuidance"] for s in sources if s.get("graderGuidance")), None)
    examples = next((s["graderExamples"] for s in sources if s.get("graderExamples")), [])
    if guidance is not None and not isinstance(guidance, str):
        raise GraderError("graderGuidance must be text")
    if not isinstance(examples, list) or not all(isinstance(e, dict) and "output" in e for e in examples):
        raise GraderError("graderExamples must be a list of {output, pass, score, reason}")
    return guidance, examples


def parse_rubric_verdict(reply: Any) -> dict[str, Any]:
    """The verdict object: one carrying `pass` (preferred) or at least `score`."""
    try:
        return extract(reply, "pass", compare=("pass", "score"))
    except VerdictError as first:
        if "no JSON object with 'pass'" not in str(first) and "no 'pass' field" not in str(first):
            raise
        try:
            return extract(reply, "score")
        except VerdictError as second:
            if "no JSON object with 'score'" in str(second) or "no 'score' field" in str(second):
                raise first from None
            raise


def judge(verdict: dict[str, Any], threshold: float | None) -> tuple[bool, float, str]:
    """promptfoo's pass/score rules over a parsed verdict (strict about unreadable values)."""
    raw_pass = verdict.get("pass")
    passed = True if raw_pass is None else parse_bool(raw_pass)
    if passed is None:
        raise VerdictError(f"grader's 'pass' is not true or false: {raw_pass!r}")
    raw_score = verdict.get("score")
    if raw_score is None:
        score = 1.0 if passed else 0.0
    else:
        parsed = parse_number(raw_score)
        if parsed is None:
            raise VerdictError(f"grader's 'score' is not a number: {raw_score!r}")
        score = parsed
    if threshold is not None:
        passed = passed and score >= threshold
    reason = verdict.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        if passed:
            reason = "Grading passed"
        elif threshold is not None and score < threshold:
            reason = f"Score {score:g} is below the threshold {threshold:g}"
        else:
            reason = "The grader failed the output without giving a reason"
    return passed, score, reason


async def grade_rubric(ctx: AssertionContext, template: str) -> Grade:
    """Shared by llm-rubric-style assertions: render, ask, parse, apply threshold and `not-`."""
    rubric = ctx.value if ctx.value is not None else ""
    if not isinstance(rubric, str | dict):
        raise GraderError(f"{ctx.type} needs a string or mapping value (the rubric)")
    guidance, examples = grader_guidance(ctx)
    variables = {**ctx.vars, "output": try_parse(ctx.output_text), "rubric": rubric}
    rubric_text = rubric if isinstance(rubric, str) else json.dumps(rubric, ensure_ascii=False)
    builtin = {"output_block": fence(ctx.output_text), "rubric": rubric_text, "guidance": guidance, "examples": examples}
    prompt, schema = grader_prompt(ctx, template, variables, builtin)
    tally = Tally()
    reply = await ask(ctx, prompt, tally, schema=schema)
    with tally.reading(reply):
        passed, score, reason = judge(parse_rubric_verdict(reply), ctx.threshold)
    if ctx.inverse:
        passed, score = not passed, min(1.0, max(0.0, 1.0 - score))
    return tally.grade(passed, score, reason, metadata={"graderReply": excerpt(reply, 500)})


@assertion("llm-rubric", handles_inverse=True, model_graded=True)
async def llm_rubric(ctx: AssertionContext) -> Grade:
    return await grade_rubric(ctx, "llm-rubric")
