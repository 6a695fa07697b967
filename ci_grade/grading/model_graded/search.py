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

from ci_grade.errors import VerdictError, VerdictProblem
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.model_graded.rubric import judge, rubric_prompt
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import extract, parse_bool


@assertion(
    "search-rubric", grader="text", prompt="search-rubric",
    value=ValueSpec("{type} needs a string value (the rubric to check with web search)", STRING),
)
async def search_rubric(ctx: AssertionContext, grader: GraderSession) -> Measure:
    prompt, _ = rubric_prompt(ctx, grader, "search-rubric")
    provider, searching = ctx.run.graders.resolve_search(ctx.grader_ref, ctx.type)
    response = await grader.call(prompt, provider=provider)
    reply = response.output
    with grader.reading(reply, searchProvider=provider.describe()):
        verdict = extract(reply, "pass", compare=("pass", "score"))
        if parse_bool(verdict.get("pass")) is None:
            raise VerdictError(f"grader's 'pass' is not true or false: {verdict.get('pass')!r}", VerdictProblem.INVALID)
        passed, score, reason = judge(verdict, ctx.threshold)
    if not searching:
        reason = f"{reason} (graded by {provider.describe()}, which has no web search tool: the verdict rests on the grader's own knowledge)"
    metadata = {
        "graderReply": excerpt(reply, 500),
        "searchProvider": provider.describe(),
        "webSearch": searching,
        "searchResults": list(response.metadata.get("searchResults") or []),
    }
    return Measure(score, reason, verdict=passed, metadata=metadata)
