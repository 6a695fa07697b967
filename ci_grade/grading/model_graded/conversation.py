"""`conversation-relevance`: is every assistant turn relevant, judged over sliding windows.

Messages are `vars._conversation` (a list of `{input, output}` turns: in a multi-turn test, the
turns so far and the reply under test), else the one turn prompt -> output. For each turn i one grader call judges the window of turns
`max(0, i - windowSize + 1) .. i` (`config.windowSize`, default 5): is the last reply relevant?
The score is the share of relevant windows; PASS when it reaches `threshold` (default 0.5); `not-`
flips the verdict and reports `1 - score`. When some windows were irrelevant, one more call
summarises why. A window the grader cannot judge makes the whole assertion an ERROR.
"""

from __future__ import annotations

import json
from typing import Any

from ci_grade.errors import GraderError, TemplateError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, load_override, template_vars
from ci_grade.grading.registry import assertion
from ci_grade.grading.session import GraderSession
from ci_grade.grading.verdicts import extract
from ci_grade.templating import nunjucks

DEFAULT_WINDOW = 5


def turns(ctx: AssertionContext) -> list[dict[str, Any]]:
    """The conversation to judge: `vars._conversation`, else the single prompt/output turn."""
    conversation = ctx.vars.get("_conversation")
    if conversation is None or conversation == []:  # a conversation's first turn: this one, as in promptfoo
        return [{"input": ctx.prompt, "output": ctx.output}]
    if not isinstance(conversation, list):
        raise GraderError("conversation-relevance: vars._conversation must be a list of {input, output} turns")
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


def window_prompt(ctx: AssertionContext, grader: GraderSession, window: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
    """A custom rubricPrompt is rendered as plain text with `messages` as the raw turns (as promptfoo does)."""
    override = ctx.rubric_prompt
    if override is not None:
        text = load_override(override, ctx.run.base_dir, ctx.run.env_overrides)
        try:
            return nunjucks.render(text, {**ctx.vars, "messages": window}, ctx.run.env_overrides), None
        except TemplateError as exc:
            raise GraderError(f"rubricPrompt: {exc}") from None
    block = fence(json.dumps(as_messages(window), ensure_ascii=False, indent=2), "conversation")
    return grader.prompt("conversation-relevance", {}, {"messages_block": block}, inherit=False)


def parse_window(reply: Any) -> tuple[str, str]:
    """(the verdict, "yes" or "no"; the grader's reason) for one window."""
    verdict = extract(reply, "verdict")
    raw = verdict.get("verdict")
    word = raw.strip().lower() if isinstance(raw, str) else {True: "yes", False: "no"}.get(raw) if isinstance(raw, bool) else raw
    if word not in ("yes", "no"):
        raise VerdictError(f"grader's 'verdict' must be 'yes' or 'no', got {raw!r}", VerdictProblem.INVALID)
    reason = verdict.get("reason")
    return word, reason.strip() if isinstance(reason, str) else ""


async def summary(grader: GraderSession, score: float, reasons: list[str]) -> tuple[str | None, str | None]:
    """(reason, error): one call summarising the irrelevant windows; its failure only loses the summary."""
    template = grader.template("conversation-relevance-reason")
    prompt = template.render(template_vars({"score": f"{score:.2f}", "reasons_block": fence(json.dumps(reasons, ensure_ascii=False, indent=2), "notes")}))
    try:
        reply = await grader.ask(prompt, schema=template.response_schema, what="conversation-relevance reason")
        reason = extract(reply, "reason").get("reason")
    except GraderError as exc:
        return None, exc.reason
    return (reason.strip(), None) if isinstance(reason, str) and reason.strip() else (None, "the summary reply had no reason")


@assertion("conversation-relevance", grader="text", prompt="conversation-relevance", default_threshold=0.5)
async def conversation_relevance(ctx: AssertionContext, grader: GraderSession) -> Measure:
    conversation = turns(ctx)
    size = window_size(ctx)
    choices = grader.scoring("conversation-relevance")
    windows: list[dict[str, Any]] = []
    scores: list[float] = []
    for i in range(len(conversation)):
        window = conversation[max(0, i - size + 1) : i + 1]
        prompt, schema = window_prompt(ctx, grader, window)
        what = f"window {i + 1}/{len(conversation)}"
        verdict, reason = await grader.read(prompt, parse_window, schema=schema, what=f"conversation-relevance {what}", prefix=f"{what}: ", windows=windows)
        windows.append({"turn": i, "relevant": verdict == "yes", "reason": reason})
        scores.append(choices.choice(verdict))
    relevant_count = sum(1 for w in windows if w["relevant"])
    score = sum(scores) / len(scores)
    reason = f"{relevant_count} out of {len(windows)} conversation windows were relevant"
    metadata: dict[str, Any] = {"windows": windows, "windowSize": size, "threshold": ctx.effective_threshold}
    irrelevant = [w["reason"] for w in windows if not w["relevant"] and w["reason"]]
    if irrelevant and score < 1:
        summarised, error = await summary(grader, score, irrelevant)
        if summarised:
            reason = summarised
        else:
            metadata["summaryError"] = error
    return Measure(score, reason, metadata=metadata)
