"""`model-graded-closedqa`: does the output meet one criterion, judged by the reply's final line.

The grader reasons, then ends with Y or N. As in promptfoo, only the final line decides and the
letter is case-sensitive: a final line ending in `Y` is a yes (`Y Y`, `Answer: Y`), one ending in `N`
a no, so an echoed `Y` earlier in the reply changes nothing. Tolerant about form where promptfoo is
not (`**Y**` and `Y.` read as Y), stricter about meaning: the letter must stand alone (`BUSY` is not
a yes), and a reply whose final line holds no verdict is an ERROR rather than a silent failure. A
reply without one but with a JSON verdict carrying `pass` (what an llm-rubric-style `rubricPrompt`
produces, as in the seeds' German example) is read as that verdict. `not-` inverts (promptfoo
ignores it).
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.errors import GraderError, VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import extract, not_text, parse_bool

_FINAL_VERDICT = re.compile(r"""(?:^|[^A-Za-z0-9])([YN])[\s*_`"'.!)\]]*$""")


def parse_closedqa(reply: Any) -> tuple[bool, str]:
    """(meets the criterion, the grader's reasoning) from a closed-QA reply."""
    if isinstance(reply, dict):
        return _json_verdict(reply), str(reply.get("reason") or "")
    if not isinstance(reply, str):
        raise not_text(reply, "text ending in Y or N")
    text = reply.rstrip()
    lines = text.splitlines()
    match = _FINAL_VERDICT.search(lines[-1]) if lines else None
    if match is None:
        try:
            verdict = extract(text, "pass")
        except VerdictError:
            raise VerdictError("grader reply's final line does not end with Y or N", VerdictProblem.MISSING) from None
        return _json_verdict(verdict), str(verdict.get("reason") or "")
    reasoning = "\n".join(lines[:-1]).strip() or text
    return match.group(1) == "Y", reasoning


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
