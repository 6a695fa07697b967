"""`context-recall`: how much of the ground truth (`value`) the context supports.

One text call: the grader classifies each sentence of the ground truth as `[Attributed]` (the
context supports it) or `[Not Attributed]`, one line per sentence. Score = attributed lines /
classified lines (default threshold 0.5). Without `vars.context` or `contextTransform` the prompt
is the context. A line's last marker is its verdict; a reply with no classification line is a
grader error (never a score of 0). Template variables: test vars, `context`, `groundTruth`.
"""

from __future__ import annotations

import re

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade, output_as_text
from ci_grade.grading.grader_prompts import fence
from ci_grade.grading.model_graded.common import Tally, ask, excerpt, grader_prompt
from ci_grade.grading.model_graded.rag_context import resolve_context
from ci_grade.grading.model_graded.scoring import RAG_THRESHOLD, inverted, reaches, shown
from ci_grade.grading.registry import assertion

_MARKER = re.compile(r"\[\s*(not\s+attributed|attributed)\s*\]", re.I)


def attributions(reply: str) -> list[tuple[str, bool]]:
    """(line, attributed) for each classified line; the line's last marker is its verdict."""
    found = []
    for line in reply.splitlines():
        markers = _MARKER.findall(line)
        if markers:
            found.append((line.strip(), not markers[-1].lower().startswith("not")))
    return found


@assertion("context-recall", handles_inverse=True, model_graded=True)
async def context_recall(ctx: AssertionContext) -> Grade:
    ground_truth = ctx.value
    if not isinstance(ground_truth, str) or not ground_truth.strip():
        raise GraderError("context-recall needs a value: the ground-truth statement(s) the context should support")
    context = await resolve_context(ctx, fallback=ctx.prompt)
    threshold = RAG_THRESHOLD if ctx.threshold is None else ctx.threshold
    variables = {**ctx.vars, "context": context.text, "groundTruth": ground_truth}
    builtin = {"context_block": fence(context.text, "context"), "ground_truth_block": fence(ground_truth, "ground_truth")}
    prompt, _ = grader_prompt(ctx, "context-recall", variables, builtin)
    tally = Tally()
    reply = output_as_text(await ask(ctx, prompt, tally, what="context-recall"))
    lines = attributions(reply)
    metadata = {"context": context.text, "contextSource": context.source}
    if not lines:
        raise tally.error("grader returned no [Attributed]/[Not Attributed] classifications", {**metadata, "graderReply": excerpt(reply)})
    attributed = sum(1 for _, ok in lines if ok)
    score = attributed / len(lines)
    passed = reaches(score, threshold)
    reason = f"Recall {score:.2f} is {'>=' if passed else '<'} {shown(threshold)}"
    passed, final = inverted(passed, score, ctx.inverse)
    metadata.update(
        {
            "sentenceAttributions": [{"sentence": line, "attributed": ok} for line, ok in lines],
            "totalSentences": len(lines),
            "attributedSentences": attributed,
            "score": score,
        }
    )
    return tally.grade(passed, final, reason, metadata=metadata)
