"""`model-graded-closedqa`: does the output meet one criterion, judged by a final Y/N line.

The grader reasons, then ends with a line holding only Y or N. Stricter than promptfoo (which
passes any reply whose last character is `Y`): the verdict must stand on a line of its own, every
such line must agree (a grader that echoes a submission's fake `Y` and then says `N` is an ERROR,
not a pass), and a reply without one is an ERROR. A reply with no Y/N line but a JSON verdict
carrying `pass` (what an llm-rubric-style `rubricPrompt` produces, as in the seeds' German example)
is read as that verdict. `not-` inverts (promptfoo ignores it).
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import extract, parse_bool

_VERDICT_LINE = re.compile(
    r"""^[\s>#*_`"'-]*(?:(?:final\s+)?(?:answer|verdict|decision|grade)\s*[:=]\s*)?[*_`"'(\[]*\s*([YN])\s*[)\]*_`"'.!]*\s*$""",
    re.IGNORECASE,
)


def parse_closedqa(reply: Any) -> tuple[bool, str]:
    """(meets the criterion, the grader's reasoning) from a closed-QA reply."""
    if isinstance(reply, dict):
        return _json_verdict(reply), str(reply.get("reason") or "")
    text = str(reply)
    lines = text.splitlines()
    found = [(i, m.group(1).upper()) for i, line in enumerate(lines) if (m := _VERDICT_LINE.match(line))]
    if not found:
        try:
            verdict = extract(text, "pass")
        except VerdictError:
            raise VerdictError("grader reply has no final line holding only Y or N", VerdictProblem.MISSING) from None
        return _json_verdict(verdict), str(verdict.get("reason") or "")
    if len({letter for _, letter in found}) > 1:
        raise VerdictError("grader reply has conflicting Y and N verdict lines", VerdictProblem.CONFLICTING)
    reasoning = "\n".join(line for i, line in enumerate(lines) if i not in {j for j, _ in found}).strip()
    return found[-1][1] == "Y", reasoning


def _json_verdict(verdict: dict[str, Any]) -> bool:
    passed = parse_bool(verdict.get("pass"))
    if passed is None:
        raise VerdictError(f"grader's 'pass' is not true or false: {verdict.get('pass')!r}", VerdictProblem.INVALID)
    return passed


@assertion(
    "model-graded-closedqa", grader="text", prompt="model-graded-closedqa",
    value=ValueSpec("{type} needs a string value (the criterion)", STRING),
)
async def closedqa(ctx: AssertionContext, grader: GraderSession) -> Measure:
    criteria = ctx.value
    if not ctx.prompt.strip():
        raise GraderError("model-graded-closedqa needs the prompt (the task), but the rendered prompt is empty")
    completion = try_parse(ctx.output_text)
    # `output`/`rubric` are aliases so llm-rubric-style rubricPrompts (the seeds' German example) work too.
    variables = {"output": completion, "rubric": criteria, **ctx.vars, "input": ctx.prompt, "criteria": criteria, "completion": completion}
    builtin = {"task_block": fence(ctx.prompt, "task"), "submission_block": fence(ctx.output_text, "submission")}
    prompt, schema = grader.prompt("model-graded-closedqa", variables, builtin)
    reply = await grader.ask(prompt, schema=schema)
    with grader.reading(reply):
        meets, reasoning = parse_closedqa(reply)
    score = grader.scoring("model-graded-closedqa").choice("Y" if meets else "N")
    verdict = "meets" if meets else "does not meet"
    reason = f"The submission {verdict} the criterion" + (f": {reasoning}" if reasoning else "")
    return Measure(score, reason, metadata={"graderReply": excerpt(reply, 500)})
