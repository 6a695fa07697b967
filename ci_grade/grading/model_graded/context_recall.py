"""`context-recall`: how much of the ground truth (`value`) the context supports.

One text call: the grader classifies each sentence of the ground truth as `[Attributed]` (the
context supports it) or `[Not Attributed]`, one line per sentence. Score = attributed lines /
classified lines (default threshold 0.5). Without `vars.context` or `contextTransform` the prompt
is the context. A line's last marker is its verdict; a reply with no classification line is a
grader error (never a score of 0). Template variables: test vars, `context`, `groundTruth`.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.grading.context import AssertionContext, Measure, output_as_text
from ci_grade.grading.grader_prompts import fence
from ci_grade.grading.model_graded.rag_context import resolve_context
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt

_MARKER = re.compile(r"\[\s*(not\s+attributed|attributed)\s*\]", re.I)


def attributions(reply: str) -> list[tuple[str, str]]:
    """(line, its choice: "Attributed" or "Not Attributed") for each classified line; a line's last marker decides."""
    found = []
    for line in reply.splitlines():
        markers = _MARKER.findall(line)
        if markers:
            found.append((line.strip(), "Not Attributed" if markers[-1].lower().startswith("not") else "Attributed"))
    return found


@assertion(
    "context-recall", grader="text", prompt="context-recall", default_threshold=0.5, csv_threshold=0.75,
    value=ValueSpec("{type} needs a value: the ground-truth statement(s) the context should support", STRING),
)
async def context_recall(ctx: AssertionContext, grader: GraderSession) -> Measure:
    ground_truth = ctx.value
    context = await resolve_context(ctx, fallback=ctx.prompt)
    variables = {**ctx.vars, "context": context.text, "groundTruth": ground_truth}
    builtin = {"context_block": fence(context.text, "context"), "ground_truth_block": fence(ground_truth, "ground_truth")}
    prompt, _ = grader.prompt("context-recall", variables, builtin)
    reply = output_as_text(await grader.ask(prompt, what="context-recall"))
    lines = attributions(reply)
    metadata: dict[str, Any] = {"context": context.text, "contextSource": context.source}
    if not lines:
        raise grader.error("grader returned no [Attributed]/[Not Attributed] classifications", {**metadata, "graderReply": excerpt(reply)})
    choices = grader.scoring("context-recall")
    scores = [choices.choice(choice) for _, choice in lines]
    attributed = sum(1 for _, choice in lines if choice == "Attributed")
    score = sum(scores) / len(scores)
    metadata.update(
        {
            "sentenceAttributions": [{"sentence": line, "attributed": choice == "Attributed"} for line, choice in lines],
            "totalSentences": len(lines),
            "attributedSentences": attributed,
            "score": score,
        }
    )
    return Measure(score, f"Recall {score:.2f} is {{relation}} {{threshold}}", metadata=metadata)
