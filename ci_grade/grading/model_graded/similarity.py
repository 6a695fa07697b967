"""`similar`, `similar:cosine`, `similar:dot` and `similar:euclidean`: embedding similarity.

The output and each expected value are embedded by the embedding grader (the output once, however
many values there are). Cosine and dot product pass when the similarity reaches the threshold
(default 0.75); euclidean uses the threshold as a maximum distance and scores `1 / (1 + d)`.
With a list of values the first value that passes wins; `not-` needs every value to pass the
inverse check. An embedding grader that scores two texts itself (Hugging Face's
sentence-similarity task) gives the cosine similarity directly, as in promptfoo; it has no
vectors for `similar:dot` or `similar:euclidean`. A similarity that is not a finite number (overflowing or NaN vectors) and vectors
of different lengths are grader errors, never a NaN score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ci_grade.errors import GraderError, InputRejected
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import ValueSpec, assertion
from ci_grade.grading.scoring import EPSILON, reaches, shown
from ci_grade.grading.session import GraderSession

METRICS = {"similar": "cosine", "similar:cosine": "cosine", "similar:dot": "dot", "similar:euclidean": "euclidean"}


def _checked(a: list[float], b: list[float]) -> None:
    if len(a) != len(b):
        raise InputRejected(f"embeddings have different lengths ({len(a)} and {len(b)})")


def _total(terms: Iterable[float], what: str) -> float:
    """An exact sum that must be finite (overflowing or NaN vectors raise InputRejected)."""
    try:
        value = math.fsum(terms)
    except (OverflowError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise InputRejected(f"invalid {what}: the embeddings overflow or contain NaN/infinite values")
    return value


def dot(a: list[float], b: list[float]) -> float:
    _checked(a, b)
    return _total((x * y for x, y in zip(a, b, strict=True)), "dot product")


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity; a zero vector is similar to nothing (0)."""
    product = dot(a, b)
    norms = math.sqrt(_total((x * x for x in a), "vector norm")) * math.sqrt(_total((y * y for y in b), "vector norm"))
    if norms == 0:
        return 0.0
    similarity = product / norms
    if not math.isfinite(similarity):
        raise InputRejected("invalid cosine similarity: the embeddings overflow")
    return similarity


def euclidean(a: list[float], b: list[float]) -> float:
    _checked(a, b)
    return math.sqrt(_total(((x - y) ** 2 for x, y in zip(a, b, strict=True)), "euclidean distance"))


@dataclass
class Comparison:
    """One expected value compared with the output, judged for the positive or the `not-` form."""

    expected: str
    measure: float
    passed: bool
    score: float
    reason: str


def judge(metric: str, measure: float, threshold: float, inverse: bool, expected: str) -> Comparison:
    """promptfoo's per-value rule; the inverse check is the exact complement of the positive one."""
    if metric == "euclidean":
        close = measure <= threshold + EPSILON
        relation = "less than or equal to" if close else "greater than"
        reason = f"Distance {measure:.2f} is {relation} threshold {shown(threshold)}"
        score = 1.0 / (1.0 + measure)
        passed = close != inverse
        return Comparison(expected, measure, passed, 1.0 - score if inverse else score, reason)
    similar = reaches(measure, threshold)
    relation = "greater than or equal to" if similar else "less than"
    reason = f"Similarity {measure:.2f} is {relation} threshold {shown(threshold)}"
    return Comparison(expected, measure, similar != inverse, 1.0 - measure if inverse else measure, reason)


_EXPECTED = ValueSpec("{type} needs a value: the expected text (or a list of texts) to compare the output with", blank=True)


def expected_values(ctx: AssertionContext) -> list[str]:
    values = ctx.value if isinstance(ctx.value, list) else [ctx.value]
    for item in values:
        if not isinstance(item, str) or not item:
            raise GraderError(f"{ctx.type} values must be non-empty strings, got {item!r}")
    return values


async def grade_similarity(ctx: AssertionContext, metric: str) -> Grade:
    values = expected_values(ctx)
    threshold = ctx.effective_threshold
    assert threshold is not None
    tally = GraderSession(ctx)
    compares = tally.provider("embedding").compares
    if compares and metric != "cosine":
        raise tally.error(f"{ctx.type}: {tally.provider('embedding').describe()} scores similarity itself and gives no vectors; use similar (cosine)")
    output_vector = [] if compares else await tally.embed(ctx.output_text)
    measure_of = {"cosine": cosine, "dot": dot, "euclidean": euclidean}[metric]
    compared: list[Comparison] = []
    for expected in values:
        try:
            measure = await tally.similarity(expected, ctx.output_text) if compares else measure_of(output_vector, await tally.embed(expected))
        except InputRejected as exc:
            raise tally.error(f"{ctx.type}: {exc}") from None
        comparison = judge(metric, measure, threshold, ctx.inverse, expected)
        compared.append(comparison)
        if comparison.passed != ctx.inverse:
            # positive form: the first passing value decides; not-: the first failing one does
            break
    metadata: dict[str, Any] = {
        "metric": metric,
        "threshold": threshold,
        "comparisons": [{"expected": c.expected, metric if metric != "euclidean" else "distance": c.measure} for c in compared],
    }
    decisive = compared[-1]
    if ctx.inverse:
        if not decisive.passed:
            return tally.grade(False, decisive.score, _labelled(decisive, values), metadata=metadata)
        lowest = min(compared, key=lambda c: c.score)
        return tally.grade(True, lowest.score, _labelled(lowest, values), metadata=metadata)
    if decisive.passed:
        return tally.grade(True, decisive.score, _labelled(decisive, values), metadata=metadata)
    if len(values) == 1:
        return tally.grade(False, decisive.score, decisive.reason, metadata=metadata)
    best = max(compared, key=lambda c: c.score)
    return tally.grade(False, best.score, f"None of the {len(values)} expected values met the similarity threshold (best: {best.reason.lower()})", metadata=metadata)


def _labelled(comparison: Comparison, values: list[str]) -> str:
    if len(values) == 1:
        return comparison.reason
    return f"{comparison.reason} (expected value {values.index(comparison.expected) + 1} of {len(values)})"


def _register(name: str) -> None:
    metric = METRICS[name]

    async def handler(ctx: AssertionContext) -> Grade:
        return await grade_similarity(ctx, metric)

    handler.__name__ = f"similar_{metric}" if name != "similar" else "similar"
    assertion(name, grader="embedding", handles_inverse=True, default_threshold=0.75, csv_threshold=0.8 if name == "similar" else None, value=_EXPECTED)(handler)


for _name in METRICS:
    _register(_name)
