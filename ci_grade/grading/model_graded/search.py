"""`search-rubric`: `llm-rubric` graded by a model that can search the web.

Grader choice: a configured grader (assertion `provider` > test `options.provider` >
`--grader`/`defaultTest`) is used as configured; if it has no web search, it still grades and the
result says so (`metadata.webSearch: false` and a note in the reason) instead of being silently
swapped for another model as promptfoo does. With nothing configured, the default is a web-search
grader from the environment (OpenAI's Responses API with `web_search_preview`, else Claude with
its web search tool). The reply must carry a boolean `pass`; threshold and `not-` follow
`llm-rubric`.
"""

from __future__ import annotations

from ci_grade.errors import GraderError, VerdictError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.model_graded.common import Tally, call_grader, excerpt, grader_prompt
from ci_grade.grading.model_graded.rubric import grader_guidance, judge
from ci_grade.grading.registry import assertion
from ci_grade.grading.verdicts import extract, parse_bool


@assertion("search-rubric", handles_inverse=True, model_graded=True)
async def search_rubric(ctx: AssertionContext) -> Grade:
    rubric = ctx.value
    if not isinstance(rubric, str) or not rubric.strip():
        raise GraderError("search-rubric needs a string value (the rubric to check with web search)")
    guidance, examples = grader_guidance(ctx)
    variables = {**ctx.vars, "output": try_parse(ctx.output_text), "rubric": rubric}
    builtin = {"output_block": fence(ctx.output_text), "rubric": rubric, "guidance": guidance, "examples": examples}
    prompt, _ = grader_prompt(ctx, "search-rubric", variables, builtin)
    provider, searching = ctx.run.graders.resolve_search(ctx.grader_ref, ctx.type)
    tally = Tally()
    response = await call_grader(ctx, prompt, tally, provider=provider)
    reply = response.output
    with tally.reading(reply, searchProvider=provider.describe()):
        verdict = extract(reply, "pass", compare=("pass", "score"))
        if parse_bool(verdict.get("pass")) is None:
            raise VerdictError(f"grader's 'pass' is not true or false: {verdict.get('pass')!r}")
        passed, score, reason = judge(verdict, ctx.threshold)
    if not searching:
        reason = f"{reason} (graded by {provider.describe()}, which has no web search tool: the verdict rests on the grader's own knowledge)"
    if ctx.inverse:
        passed, score = not passed, min(1.0, max(0.0, 1.0 - score))
    metadata = {
        "graderReply": excerpt(reply, 500),
        "searchProvider": provider.describe(),
        "webSearch": searching,
        "searchResults": list(response.metadata.get("searchResults") or []),
    }
    return tally.grade(passed, score, reason, metadata=metadata)
