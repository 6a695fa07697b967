"""`conversation-relevance`: is every assistant turn relevant, judged over sliding windows.

Messages are `vars._conversation` (a list of `{input, output}` turns), else the one turn
prompt -> output. For each turn i one grader call judges the window of turns
`max(0, i - windowSize + 1) .. i` (`config.windowSize`, default 5): is the last reply relevant?
The score is the share of relevant windows; PASS when it reaches `threshold` (default 0.5); `not-`
flips the verdict and reports `1 - score`. When some windows were irrelevant, one more call
summarises why. A window the grader cannot judge makes the whole assertion an ERROR.
"""

from __future__ import annotations

import json
from typing import Any

from ci_grade.config import nunjucks
from ci_grade.errors import GraderError, TemplateError, VerdictError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.grader_prompts import fence, load_override, load_template, template_vars
from ci_grade.grading.model_graded.common import Tally, ask, grader_prompt, rubric_prompt_override
from ci_grade.grading.model_graded.scoring import RAG_THRESHOLD, reaches
from ci_grade.grading.registry import assertion
from ci_grade.grading.verdicts import extract

DEFAULT_WINDOW = 5


def turns(ctx: AssertionContext) -> list[dict[str, Any]]:
    """The conversation to judge: `vars._conversation`, else the single prompt/output turn."""
    conversation = ctx.vars.get("_conversation")
    if conversation is None:
        return [{"input": ctx.prompt, "output": ctx.output}]
    if not isinstance(conversation, list) or not conversation:
        raise GraderError("conversation-relevance: vars._conversation must be a non-empty list of {input, output} turns")
    for i, turn in enumerate(conversation):
        if not isinstance(turn, dict) or "input" not in turn or "output" not in turn:
            raise GraderError(f"conversation-relevance: vars._conversation[{i}] must be a mapping with 'input' and 'output'")
    return conversation


def window_size(ctx: AssertionContext) -> int:
    size = ctx.config.get("windowSize", DEFAULT_WINDOW)
    if isinstance(size, bool) or not isinstance(size, int | float) or size < 1 or int(size) != size:
        raise GraderError(f"conversation-relevance: config.windowSize must be a whole number of at least 1, got {size!r}")
    return int(size)


def as_messages(window: list[dict[str, Any]]) -> list[dict[str, str]]:
    messages = []
    for turn in window:
        for role, key in (("user", "input"), ("assistant", "output")):
            value = turn[key]
            messages.append({"role": role, "content": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)})
    return messages


def window_prompt(ctx: AssertionContext, window: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
    """A custom rubricPrompt is rendered as plain text with `messages` as the raw turns (as promptfoo does)."""
    override = rubric_prompt_override(ctx)
    if override is not None:
        text = load_override(override, ctx.run.base_dir, ctx.run.env_overrides)
        try:
            return nunjucks.render(text, {**ctx.vars, "messages": window}, ctx.run.env_overrides), None
        except TemplateError as exc:
            raise GraderError(f"rubricPrompt: {exc}") from None
    block = fence(json.dumps(as_messages(window), ensure_ascii=False, indent=2), "conversation")
    return grader_prompt(ctx, "conversation-relevance", {}, {"messages_block": block}, inherit=False)


def parse_window(reply: Any) -> tuple[bool, str]:
    verdict = extract(reply, "verdict")
    raw = verdict.get("verdict")
    word = raw.strip().lower() if isinstance(raw, str) else raw
    if word not in ("yes", "no", True, False):
        raise VerdictError(f"grader's 'verdict' must be 'yes' or 'no', got {raw!r}")
    reason = verdict.get("reason")
    return word in ("yes", True), reason.strip() if isinstance(reason, str) else ""


async def summary(ctx: AssertionContext, score: float, reasons: list[str], tally: Tally) -> tuple[str | None, str | None]:
    """(reason, error): one call summarising the irrelevant windows; its failure only loses the summary."""
    template = load_template("conversation-relevance-reason")
    ctx.run.templates[template.name] = template.hash
    prompt = template.render(template_vars({"score": f"{score:.2f}", "reasons_block": fence(json.dumps(reasons, ensure_ascii=False, indent=2), "notes")}))
    try:
        reply = await ask(ctx, prompt, tally, schema=template.response_schema, what="conversation-relevance reason")
        reason = extract(reply, "reason").get("reason")
    except (GraderError, VerdictError) as exc:
        return None, exc.reason if isinstance(exc, GraderError) else str(exc)
    return (reason.strip(), None) if isinstance(reason, str) and reason.strip() else (None, "the summary reply had no reason")


@assertion("conversation-relevance", handles_inverse=True, model_graded=True)
async def conversation_relevance(ctx: AssertionContext) -> Grade:
    conversation = turns(ctx)
    size = window_size(ctx)
    threshold = RAG_THRESHOLD if ctx.threshold is None else ctx.threshold
    tally = Tally()
    windows: list[dict[str, Any]] = []
    for i in range(len(conversation)):
        window = conversation[max(0, i - size + 1) : i + 1]
        prompt, schema = window_prompt(ctx, window)
        reply = await ask(ctx, prompt, tally, schema=schema, what=f"conversation-relevance window {i + 1}/{len(conversation)}")
        with tally.reading(reply, f"window {i + 1}/{len(conversation)}: ", windows=windows):
            relevant, reason = parse_window(reply)
        windows.append({"turn": i, "relevant": relevant, "reason": reason})
    relevant_count = sum(1 for w in windows if w["relevant"])
    score = relevant_count / len(windows)
    reason = f"{relevant_count} out of {len(windows)} conversation windows were relevant"
    metadata: dict[str, Any] = {"windows": windows, "windowSize": size, "threshold": threshold}
    irrelevant = [w["reason"] for w in windows if not w["relevant"] and w["reason"]]
    if irrelevant and score < 1:
        summarised, error = await summary(ctx, score, irrelevant, tally)
        if summarised:
            reason = summarised
        else:
            metadata["summaryError"] = error
    passed = reaches(score, threshold) != ctx.inverse
    if ctx.inverse:
        score = 1.0 - score
    return tally.grade(passed, score, reason, metadata=metadata)
