"""Text-similarity assertions: levenshtein, rouge-n, bleu and gleu.

The metrics are small pure functions (tested on hand-computed examples); the handlers apply
promptfoo's thresholds: levenshtein passes when the edit distance (in UTF-16 code units, as
JavaScript counts) is <= threshold (default 5), rouge-n and bleu score the metric and pass when it
is >= threshold (defaults 0.75 and 0.5; gleu 0.5), with `not-` flipping the verdict and reporting
`1 - score`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import STRING, ValueSpec, assertion
from ci_grade.grading.treebank import tokenize
from ci_grade.js_values import JS_WHITESPACE, js_fixed
from ci_grade.safe_text import utf16_units
from ci_grade.templating.nunjucks import js_string

BLEU_MAX_N = 4
BLEU_ZERO_PRECISION = 1e-7  # smoothing for an order with no matching n-gram, as promptfoo does
ROUGE_MAX_WORK = 1_000_000  # js-rouge refuses to build n-grams from more token text (UTF-16 units)
GLEU_MAX_N = 4
_JS_SPACES = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def levenshtein(a: str, b: str) -> int:
    """Insertions, deletions and substitutions of UTF-16 code units turning `a` into `b`."""
    from rapidfuzz.distance import Levenshtein

    return int(Levenshtein.distance(utf16_units(a), utf16_units(b)))


def ngrams(tokens: list[str], n: int) -> Counter[tuple[str, ...]]:
    """Counts of the n-grams of a token list."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(candidate: str, reference: str) -> float:
    """promptfoo's ROUGE-N (always unigrams): the F1 of clipped counts of lower-cased treebank tokens.

    Raises ValueError for a reference without tokens, or token text longer than js-rouge takes.
    """
    found, wanted = tokenize(candidate.lower()), tokenize(reference.lower())
    if not wanted:
        raise ValueError("the reference has no tokens")
    if not found:
        return 0.0
    if max(sum(len(utf16_units(t)) for t in tokens) for tokens in (found, wanted)) > ROUGE_MAX_WORK:
        raise ValueError(f"its tokens hold over {ROUGE_MAX_WORK:,} characters (js-rouge's limit)")
    reference_counts = Counter(wanted)
    overlap = sum(min(count, reference_counts[token]) for token, count in Counter(found).items())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(found), overlap / len(wanted)
    if precision == recall:
        return precision
    low, high = sorted((precision, recall))
    return min(high, low * (2 / (1 + low / high)))  # js-rouge's fMeasure at beta 1, to the last bit


def bleu_tokens(text: str) -> list[str]:
    """Lower-cased, whitespace-separated tokens (promptfoo's BLEU tokenisation)."""
    return text.lower().split()


def bleu(candidate: str, references: list[str], max_n: int = BLEU_MAX_N) -> float:
    """Sentence BLEU with uniform weights over 1..max_n-grams and the brevity penalty.

    Candidate n-gram counts are clipped by their largest count in any one reference. Orders the
    candidate is too short to contain are left out (weights renormalised); an order with no
    match counts with precision 1e-7. Blank references are ignored.
    """
    refs = [bleu_tokens(r) for r in references if r.strip()]
    if not refs:
        raise ValueError("no non-blank reference")
    words = bleu_tokens(candidate)
    if not words:
        return 0.0
    logs: list[float] = []
    for n in range(1, max_n + 1):
        counts = ngrams(words, n)
        total = sum(counts.values())
        if total == 0:
            continue
        best: Counter[tuple[str, ...]] = Counter()
        for ref in refs:
            best |= ngrams(ref, n)
        clipped = sum(min(count, best[gram]) for gram, count in counts.items())
        logs.append(math.log(clipped / total if clipped else BLEU_ZERO_PRECISION))
    return brevity_penalty(len(words), [len(r) for r in refs]) * math.exp(sum(logs) / len(logs))


def gleu_tokens(text: str) -> list[str]:
    """promptfoo's GLEU tokens: lower-cased, split on JavaScript whitespace, trailing dots cut.

    Tokens left empty (a lone "...") stay, as in promptfoo; text with no non-empty token has none.
    """
    words = [word.rstrip(".") for word in _JS_SPACES.split(text.lower().strip(JS_WHITESPACE))]
    return words if any(words) else []


def gleu(candidate: str, references: list[str], max_n: int = GLEU_MAX_N) -> float:
    """Google-BLEU: per reference, min(precision, recall) of clipped 1..max_n-gram matches; the
    best reference counts. A candidate identical to a reference (token for token) scores 1."""
    words = gleu_tokens(candidate)
    if not words:
        return 0.0
    best = 0.0
    for reference in references:
        wanted = gleu_tokens(reference)
        if words == wanted:
            return 1.0
        matches = found = expected = 0
        for n in range(1, max_n + 1):
            counts, reference_counts = ngrams(words, n), ngrams(wanted, n)
            matches += sum(min(count, reference_counts[gram]) for gram, count in counts.items())
            found += counts.total()
            expected += reference_counts.total()
        if found and expected:
            best = max(best, min(matches / found, matches / expected))
    return best


def brevity_penalty(candidate_length: int, reference_lengths: list[int]) -> float:
    """1 for a candidate longer than the closest reference (ties: the shorter), else exp(1 - r/c)."""
    closest = min(reference_lengths, key=lambda r: (abs(r - candidate_length), r))
    if candidate_length > closest:
        return 1.0
    return math.exp(1 - closest / candidate_length)


def _reference_text(ctx: AssertionContext) -> str:
    value = ctx.value
    if value is None or value == "" or isinstance(value, dict | list):
        raise GraderError(f"{ctx.type} needs a string value (the expected text)")
    return value if isinstance(value, str) else js_string(value)


def _threshold(ctx: AssertionContext) -> float:
    threshold = ctx.effective_threshold
    assert threshold is not None, "every text metric has a default threshold"
    return float(threshold)


def _rouge(ctx: AssertionContext, score: float, threshold: float) -> Grade:
    """promptfoo's ROUGE verdict: pass at score >= threshold (`not-` flips it and reports
    1 - score); the reason states the comparison either way."""
    at_least = score >= threshold
    relation = "greater than or equal to" if at_least else "less than"
    reason = f"ROUGE-N score {js_fixed(score, 2)} is {relation} threshold {js_string(threshold)}"
    return Grade(at_least != ctx.inverse, 1.0 - score if ctx.inverse else score, reason)


def _bleu(ctx: AssertionContext, score: float, threshold: float) -> Grade:
    passed = (score >= threshold) != ctx.inverse
    reason = "Assertion passed" if passed else f"BLEU score {js_fixed(score, 4)} is {'greater' if ctx.inverse else 'less'} than threshold {js_string(threshold)}"
    return Grade(passed, 1.0 - score if ctx.inverse else score, reason)


@assertion("levenshtein", handles_inverse=True, value=ValueSpec("{type} needs a string value (the expected text)", STRING, required=False), default_threshold=5, csv_threshold=0.75)
async def levenshtein_assertion(ctx: AssertionContext) -> Grade:
    if not isinstance(ctx.value, str):  # promptfoo measures the distance to empty text too
        raise GraderError(f"{ctx.type} needs a string value (the expected text)")
    expected = ctx.value
    threshold = _threshold(ctx)
    distance = levenshtein(ctx.output_text, expected)
    within = distance <= threshold
    if within != ctx.inverse:
        return Grade(True, 1.0, "Assertion passed")
    relation = "less than or equal to" if within else "greater than"
    return Grade(False, 0.0, f"Levenshtein distance {distance} is {relation} threshold {js_string(threshold)}")


@assertion("rouge-n", handles_inverse=True, value=ValueSpec("{type} needs a string value (the expected text)", STRING), default_threshold=0.75, csv_threshold=0.75)
async def rouge_n_assertion(ctx: AssertionContext) -> Grade:
    reference = _reference_text(ctx)
    try:
        score = rouge_n(ctx.output_text, reference)
    except ValueError as exc:
        raise GraderError(f"rouge-n cannot score this output: {exc}") from None
    return _rouge(ctx, score, _threshold(ctx))


@assertion("bleu", handles_inverse=True, default_threshold=0.5)
async def bleu_assertion(ctx: AssertionContext) -> Grade:
    value: Any = ctx.value
    references = value if isinstance(value, list) else [value]
    if not all(isinstance(r, str) for r in references):
        raise GraderError("bleu needs a string or a list of strings (the reference texts)")
    try:
        score = bleu(ctx.output_text, references)
    except ValueError as exc:
        raise GraderError(f"bleu needs at least one reference text: {exc}") from None
    return _bleu(ctx, score, _threshold(ctx))


@assertion("gleu", handles_inverse=True, default_threshold=0.5)
async def gleu_assertion(ctx: AssertionContext) -> Grade:
    value: Any = ctx.value
    references = value if isinstance(value, list) else [value]
    if not references or not all(isinstance(r, str) for r in references):
        raise GraderError('"gleu" assertion must have a string or array of strings value')
    threshold = _threshold(ctx)
    score = gleu(ctx.output_text, references)
    passed = (score >= threshold) != ctx.inverse
    relation = "greater than or equal to" if ctx.inverse else "less than"
    reason = "Assertion passed" if passed else f"GLEU score {js_fixed(score, 4)} is {relation} threshold {js_string(threshold)}"
    return Grade(passed, 1.0 - score if ctx.inverse else score, reason)
