"""`answer-relevance`: does the output answer the query that was asked?

The text grader writes, three times, the question the output answers (the built-in prompt asks
for a differently phrased question each time, so the three calls are distinct requests and cache
entries); the embedding grader embeds
the query (`vars.query` if it is a string, else the prompt) and each generated question; the
score is the mean cosine similarity (default threshold 0.5). A `rubricPrompt` replaces the
question-writing prompt and sees only `answer`. `not-` flips the verdict and uses `1 - score`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from ci_grade.errors import GraderError, InputRejected
from ci_grade.grading.context import AssertionContext, Measure, output_as_text
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.model_graded.similarity import cosine
from ci_grade.grading.registry import assertion
from ci_grade.grading.session import GraderSession

QUESTIONS = 3
T = TypeVar("T")


async def all_or_first_error(calls: list[Awaitable[T]], grader: GraderSession) -> list[T]:
    """Run grader calls concurrently; once all are done, raise the first failure with the full usage."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, GraderError):
            raise grader.error(result.reason, result.metadata)
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def question_from(reply: Any) -> str:
    """The generated question: the reply's text without a leading `Question:` label."""
    text = output_as_text(reply).strip()
    if text.lower().startswith("question:"):
        text = text[len("question:") :].strip()
    return text


@assertion("answer-relevance", grader="text", prompt="answer-relevance", default_threshold=0.5, csv_threshold=0.75)
async def answer_relevance(ctx: AssertionContext, grader: GraderSession) -> Measure:
    query = ctx.vars.get("query")
    if not isinstance(query, str) or not query.strip():
        query = ctx.prompt
    if not query or not query.strip():
        raise GraderError("answer-relevance needs a query: set vars.query or use a non-empty prompt")
    variables = {"answer": try_parse(ctx.output_text)}
    answer_block = fence(ctx.output_text, "answer")
    prompts = [grader.prompt("answer-relevance", variables, {"answer_block": answer_block, "variant": i, "variants": QUESTIONS})[0] for i in range(1, QUESTIONS + 1)]
    replies = await all_or_first_error([grader.ask(prompt, what="question generation") for prompt in prompts], grader)
    questions = [question_from(reply) for reply in replies]
    if not all(questions):
        raise grader.error("question generation returned an empty question", {"generatedQuestions": questions})
    vectors = await all_or_first_error([grader.embed(text) for text in (query, *questions)], grader)
    try:
        similarities = [cosine(vectors[0], vector) for vector in vectors[1:]]
    except InputRejected as exc:
        raise grader.error(f"answer-relevance: {exc}") from None
    score = sum(similarities) / len(similarities)
    metadata = {
        "generatedQuestions": [{"question": q, "similarity": s} for q, s in zip(questions, similarities, strict=True)],
        "averageSimilarity": score,
        "threshold": ctx.effective_threshold,
    }
    return Measure(score, f"Relevance {score:.2f} is {{relation}} threshold {{threshold}}", metadata=metadata)
