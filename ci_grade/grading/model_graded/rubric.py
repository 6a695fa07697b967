"""`llm-rubric`: one grader call judging the output against a free-form rubric.

Pass and score follow promptfoo: without a threshold the grader's `pass` decides (true when the
grader omits it); with a threshold, `pass` must be true AND `score >= threshold`. `not-` flips
pass and uses `1 - score` (clamped to 0..1). Unlike promptfoo, a reply without a usable verdict,
with conflicting verdicts, or with an unrecognisable `pass`/`score` is a grader ERROR.
"""

from __future__ import annotations

import json
from typing import Any

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.registry import MAPPING, STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import extract, parse_bool, parse_number


def grader_guidance(ctx: AssertionContext) -> tuple[str | None, list[dict[str, Any]]]:
    """`graderGuidance` and `graderExamples` from the assertion, its config, or the test options."""
    sources = [ctx.assertion.model_extra or {}, ctx.config, ctx.test.options.model_extra or {}]
    guidance = next((s["graderGuidance"] for s in sources if s.get("graderGuidance")), None)
    examples: Any = next((s["graderExamples"] for s in sources if s.get("graderExamples")), [])
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
        if first.problem is not VerdictProblem.MISSING:
            raise
        try:
            return extract(reply, "score")
        except VerdictError as second:
            if second.problem is VerdictProblem.MISSING:
                raise first from None
            raise


def judge(verdict: dict[str, Any], threshold: float | None) -> tuple[bool, float, str]:
    """promptfoo's pass/score rules over a parsed verdict (strict about unreadable values):
    (the grader's pass, the score, the reason as the verdict under `threshold` explains it)."""
    raw_pass = verdict.get("pass")
    passed = True if raw_pass is None else parse_bool(raw_pass)
    if passed is None:
        raise VerdictError(f"grader's 'pass' is not true or false: {raw_pass!r}", VerdictProblem.INVALID)
    raw_score = verdict.get("score")
    if raw_score is None:
        score = 1.0 if passed else 0.0
    else:
        parsed = parse_number(raw_score)
        if parsed is None:
            raise VerdictError(f"grader's 'score' is not a number: {raw_score!r}", VerdictProblem.INVALID)
        score = parsed
    reason = verdict.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        if passed and (threshold is None or score >= threshold):
            reason = "Grading passed"
        elif threshold is not None and score < threshold:
            reason = f"Score {score:g} is below the threshold {threshold:g}"
        else:
            reason = "The grader failed the output without giving a reason"
    return passed, score, reason


def rubric_prompt(ctx: AssertionContext, session: GraderSession, template: str) -> tuple[str, dict[str, Any] | None]:
    """The llm-rubric-style prompt (`template`) for this output, rubric, guidance and examples."""
    rubric = ctx.value if ctx.value is not None else ""
    guidance, examples = grader_guidance(ctx)
    variables = {**ctx.vars, "output": try_parse(ctx.output_text), "rubric": rubric}
    rubric_text = rubric if isinstance(rubric, str) else json.dumps(rubric, ensure_ascii=False)
    builtin = {"output_block": fence(ctx.output_text), "rubric": rubric_text, "guidance": guidance, "examples": examples}
    return session.prompt(template, variables, builtin)


@assertion(
    "llm-rubric", grader="text", prompt="llm-rubric",
    value=ValueSpec("{type} needs a string or mapping value (the rubric)", (*STRING, *MAPPING), required=False),
)
async def llm_rubric(ctx: AssertionContext, grader: GraderSession) -> Measure:
    prompt, schema = rubric_prompt(ctx, grader, "llm-rubric")
    reply = await grader.ask(prompt, schema=schema)
    with grader.reading(reply):
        passed, score, reason = judge(parse_rubric_verdict(reply), ctx.threshold)
    return Measure(score, reason, verdict=passed, metadata={"graderReply": excerpt(reply, 500)})
