"""`context-faithfulness`: how much of the output the context supports.

Two text calls. The first breaks the output into standalone statements (one per line); the
second judges each statement against the context and ends with
`Final verdict for each statement in order: Yes. No. ...` (per-statement `Verdict: Yes|No`
lines are read when the final line is missing). Score = 1 - (unsupported + missing verdicts) /
statements (default threshold 0.5). No statements, unreadable verdicts, more verdicts than
statements, or a final line that contradicts the per-statement verdicts are grader errors.

Needs `vars.query` and a context (no prompt fallback). A `rubricPrompt` must be a list of two
prompts: [statements prompt (`question`, `answer`), verdicts prompt (`context`, `statements`)],
each a string or a `{content}` message; test vars are available in both.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure, output_as_text
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.model_graded.rag_context import required_query, resolve_context
from ci_grade.grading.registry import assertion
from ci_grade.grading.session import GraderSession, excerpt

FINAL_LINE = "final verdict for each statement in order:"
_VERDICT = re.compile(r"verdict\s*\**\s*:\s*\**\s*(yes|no)\b")
_FINAL_PART = re.compile(r"^(?:statement\s*\d+\s*[:\-]?\s*)?\**(yes|no)\**$")
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")


def statements_from(reply: str) -> list[str]:
    """The non-blank lines of the first reply, without list markers, fences or a heading."""
    found = []
    for line in reply.splitlines():
        text = _LIST_MARKER.sub("", line.strip()).strip()
        if text and not text.startswith("```") and text.lower().rstrip(":") != "statements":
            found.append(text)
    return found


def _final_verdicts(tail: str) -> list[bool]:
    """Verdicts after the final-line marker: its line and the lines after it up to a blank line."""
    lines = tail.split("\n")
    block = [lines[0]]
    for line in lines[1:]:
        if not line.strip():
            if any(part.strip() for part in block):
                break
            continue
        block.append(line)
    verdicts = []
    for part in re.split(r"[.,;\n]", "\n".join(block)):
        part = part.strip()
        if not part:
            continue
        match = _FINAL_PART.match(part)
        if match is None:
            raise VerdictError(f"unreadable verdict {part!r} in the final verdict line", VerdictProblem.INVALID)
        verdicts.append(match.group(1) == "yes")
    if not verdicts:
        raise VerdictError("the final verdict line lists no verdicts", VerdictProblem.MISSING)
    return verdicts


def parse_verdicts(reply: str, count: int) -> list[bool]:
    """One verdict per statement given (True = supported by the context); may be fewer than `count`."""
    lowered = reply.lower()
    position = lowered.rfind(FINAL_LINE)
    per_statement = [v == "yes" for v in _VERDICT.findall(lowered if position < 0 else lowered[:position])]
    if position >= 0:
        verdicts = _final_verdicts(lowered[position + len(FINAL_LINE) :])
        if len(per_statement) == len(verdicts) and per_statement != verdicts:
            raise VerdictError("the final verdict line contradicts the per-statement verdicts", VerdictProblem.CONFLICTING)
    elif per_statement:
        verdicts = per_statement
    else:
        raise VerdictError("could not find any Yes/No verdicts in the grader's reply", VerdictProblem.MISSING)
    if len(verdicts) > count:
        raise VerdictError(f"the grader gave {len(verdicts)} verdicts for {count} statements", VerdictProblem.INVALID)
    return verdicts


def override_prompts(ctx: AssertionContext) -> tuple[Any, Any]:
    """The two-item `rubricPrompt` (or (None, None) for the built-in prompts)."""
    raw = ctx.rubric_prompt
    if raw is None:
        return None, None
    if not isinstance(raw, list) or len(raw) != 2:
        raise GraderError("context-faithfulness rubricPrompt must be a list of two prompts: [statements prompt, verdicts prompt]")
    prompts = []
    for index, item in enumerate(raw):
        if isinstance(item, dict) and "content" in item:
            item = item["content"]
        if not isinstance(item, str) or not item.strip():
            raise GraderError(f"context-faithfulness rubricPrompt item {index + 1} must be a non-empty string or a {{content: ...}} message")
        prompts.append(item)
    return prompts[0], prompts[1]


@assertion("context-faithfulness", grader="text", prompt="context-faithfulness-verdicts", default_threshold=0.5, csv_threshold=0.75)
async def context_faithfulness(ctx: AssertionContext, grader: GraderSession) -> Measure:
    query = required_query(ctx)
    context = await resolve_context(ctx)
    statements_override, verdicts_override = override_prompts(ctx)
    output = ctx.output_text
    prompt, _ = grader.prompt(
        "context-faithfulness-statements",
        {**ctx.vars, "question": query, "answer": try_parse(output)},
        {"question_block": fence(query, "question"), "answer_block": fence(output, "answer")},
        statements_override,
    )
    first = output_as_text(await grader.ask(prompt, what="statement extraction"))
    statements = statements_from(first)
    metadata: dict[str, Any] = {"context": context.text, "contextSource": context.source}
    if not statements:
        raise grader.error("could not extract context-faithfulness statements from the grader's reply", {**metadata, "graderReply": excerpt(first)})
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    prompt, _ = grader.prompt(
        "context-faithfulness-verdicts",
        {**ctx.vars, "context": context.text, "statements": statements},
        {"context_block": fence(context.text, "context"), "statements_block": fence(numbered, "statements"), "count": len(statements)},
        verdicts_override,
    )
    second = output_as_text(await grader.ask(prompt, what="statement verification"))
    with grader.reading(second, "could not read context-faithfulness verdicts: ", **metadata, statements=statements):
        verdicts = parse_verdicts(second, len(statements))
    choices = grader.scoring("context-faithfulness-verdicts")
    # a statement without a verdict counts as unsupported
    score = min(1.0, max(0.0, sum(choices.choice("yes" if supported else "no") for supported in verdicts) / len(statements)))
    metadata.update(
        {
            "statements": [{"statement": s, "supported": verdicts[i] if i < len(verdicts) else None} for i, s in enumerate(statements)],
            "missingVerdicts": len(statements) - len(verdicts),
            "score": score,
        }
    )
    return Measure(score, f"Faithfulness {score:.2f} is {{relation}} {{threshold}}", metadata=metadata)
