"""`factuality` (alias `model-graded-factuality`): the output's facts against an expert answer.

The grader picks a category: A subset, B superset, C same facts, D disagreement, E differences that
do not matter. Scores come from `options.factuality` (on the assertion, as in the factuality guide,
or in the test's options) and default to 1 for A, B, C, E and 0 for D; the assertion passes when
its score is above 0 (and reaches `threshold`, if one is set). The reply is JSON
`{category, reason}`; the legacy `(A)` text form is accepted when it names one category only.
Unlike promptfoo: conflicting categories are an ERROR, `threshold` and `not-` apply.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import extract, not_text, parse_number

# Each category's name in `options.factuality` and what it means; its default score is in the template.
CATEGORIES = {
    "A": ("subset", "the submission is a subset of the expert answer and consistent with it"),
    "B": ("superset", "the submission is a superset of the expert answer and consistent with it"),
    "C": ("agree", "the submission has the same details as the expert answer"),
    "D": ("disagree", "the submission disagrees with the expert answer"),
    "E": ("differButFactual", "the answers differ, but not in ways that matter for factuality"),
}
_LEGACY = re.compile(r"\(([A-E])\)|\b[Cc]ategory\s*[:=]?\s*\(?([A-E])\b")


def score_map(ctx: AssertionContext, defaults: dict[str, float]) -> dict[str, float]:
    """Category -> score, from the assertion's `options.factuality`, else the test's, else `defaults`."""
    nested = (ctx.assertion.model_extra or {}).get("options")
    overrides = nested.get("factuality") if isinstance(nested, dict) and nested.get("factuality") is not None else ctx.test.options.factuality
    overrides = overrides or {}
    if not isinstance(overrides, dict):
        raise GraderError("options.factuality must map subset/superset/agree/disagree/differButFactual to scores")
    known = {name for name, _ in CATEGORIES.values()}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise GraderError(f"options.factuality has unknown keys {unknown}; use {sorted(known)}")
    scores = {}
    for letter, (name, _) in CATEGORIES.items():
        value = overrides.get(name, defaults[letter])
        number = parse_number(value)
        if number is None:
            raise GraderError(f"options.factuality.{name} must be a number, got {value!r}")
        scores[letter] = number
    return scores


def parse_category(reply: Any) -> tuple[str, str]:
    """(category letter, reason) from a JSON `{category, reason}` reply or the legacy `(X) ...` text."""
    if not isinstance(reply, str | dict):
        raise not_text(reply, "a category")
    if isinstance(reply, dict) or "category" in str(reply).lower():
        try:
            verdict = extract(reply, "category", compare=("category",))
        except VerdictError as exc:
            if isinstance(reply, dict) or exc.problem is not VerdictProblem.MISSING:
                raise
        else:
            raw = verdict.get("category")
            letter = str(raw).strip().strip("()").strip().upper() if isinstance(raw, str) else ""
            if letter not in CATEGORIES:
                raise VerdictError(f"grader's category is not one of A-E: {raw!r}", VerdictProblem.INVALID)
            reason = verdict.get("reason")
            return letter, reason.strip() if isinstance(reason, str) and reason.strip() else ""
    text = str(reply)
    letters = {m.group(1) or m.group(2) for m in _LEGACY.finditer(text)}
    if not letters:
        raise VerdictError("grader reply names no category: expected JSON {category, reason} or '(A)'..'(E)'", VerdictProblem.MISSING)
    if len(letters) > 1:
        raise VerdictError(f"grader reply names conflicting categories {sorted(letters)}", VerdictProblem.CONFLICTING)
    first = _LEGACY.search(text)
    after = text[first.end() :].lstrip(")").strip() if first else ""
    return letters.pop(), after


@assertion(
    "factuality", aliases=("model-graded-factuality",), grader="text", prompt="factuality",
    value=ValueSpec("{base} needs a string value (the expert answer)", STRING),
)
async def factuality(ctx: AssertionContext, grader: GraderSession) -> Measure:
    if not ctx.prompt.strip():
        raise GraderError(f"{ctx.base_type} needs the prompt (the question), but the rendered prompt is empty")
    scores = score_map(ctx, grader.scoring("factuality").choices)
    completion = try_parse(ctx.output_text)
    variables = {**ctx.vars, "input": ctx.prompt, "ideal": ctx.value, "completion": completion}
    builtin = {"question_block": fence(ctx.prompt, "question"), "submission_block": fence(ctx.output_text, "submission")}
    prompt, schema = grader.prompt("factuality", variables, builtin)
    reply = await grader.ask(prompt, schema=schema)
    with grader.reading(reply):
        letter, reason = parse_category(reply)
    reason = reason or f"Category {letter}: {CATEGORIES[letter][1]}"
    return Measure(scores[letter], reason, metadata={"category": letter, "graderReply": excerpt(reply, 500)})
