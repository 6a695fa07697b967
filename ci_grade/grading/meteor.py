"""The `meteor` assertion, scored as promptfoo 0.123.1's `src/assertions/meteor.ts` defines it
(promptfoo's own build cannot load npm `natural` for it, so there every row is an ERROR).

Output and each reference are split on whitespace (empty tokens at the ends kept), trailing dots
cut and lower-cased. Words are aligned in three passes, each over what the last left: equal words,
then equal Porter stems (NLTK's stemmer in Martin's mode, the closest to npm `natural`'s), then
WordNet synonyms of the stems (`grading/wordnet.py`). Each pass walks the output's words from the
last and pairs each with the last unpaired reference word that fits. With P and R the share of
output and reference words paired and `chunks` the runs of pairs adjacent in both texts, the score
is (1 - gamma * (chunks / pairs) ** beta) * P * R / (alpha * P + (1 - alpha) * R), the best over the
references; it passes at >= threshold (default 0.5), `not-meteor` below it, with 1 - score.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import re
from collections.abc import Callable
from typing import Any

from ci_grade.errors import GraderError
from ci_grade.grading import wordnet
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.js_values import JS_WHITESPACE, js_fixed
from ci_grade.templating.nunjucks import js_string

ALPHA, BETA, GAMMA = 0.9, 3.0, 0.5
_JS_SPACES = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")
INSTALL_HINT = (
    "meteor assertions need NLTK and the WordNet database: pip install 'ci-grade[meteor]' and "
    "apt-get install wordnet-base (or set WNSEARCHDIR to a WordNet dict directory)"
)

Pairs = list[tuple[int, int]]
Words = list[tuple[int, str]]


def missing_requirements() -> str | None:
    """What to install before a config with `meteor` can run (None: all there)."""
    if importlib.util.find_spec("nltk") is None:
        return INSTALL_HINT
    if wordnet.directory() is None:
        named = os.environ.get("WNSEARCHDIR") or os.environ.get("WNHOME")
        where = f" (no WordNet index and data files in {named})" if named else ""
        return INSTALL_HINT + where
    return None


def tokens(text: str) -> list[str]:
    """promptfoo's METEOR words: split on JavaScript whitespace, trailing dots cut, lower-cased."""
    return [word.rstrip(".").lower() for word in _JS_SPACES.split(text)]


@functools.cache
def _stem() -> Callable[[str], str]:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError:
        raise GraderError(INSTALL_HINT) from None

    stemmer = PorterStemmer(PorterStemmer.MARTIN_EXTENSIONS)
    return functools.lru_cache(maxsize=65536)(stemmer.stem)


def _align(candidate: Words, reference: Words, fits: Callable[[str, str], bool]) -> tuple[Pairs, Words, Words]:
    """Pair words that fit, walking the candidate from its end and taking the last reference word
    that fits; returns the pairs and the words of each side left unpaired."""
    pairs: Pairs = []
    left_candidate, left_reference = list(candidate), list(reference)
    for i in range(len(left_candidate) - 1, -1, -1):
        for j in range(len(left_reference) - 1, -1, -1):
            if fits(left_candidate[i][1], left_reference[j][1]):
                pairs.append((left_candidate[i][0], left_reference[j][0]))
                del left_candidate[i], left_reference[j]
                break
    return pairs, left_candidate, left_reference


def _chunks(pairs: Pairs) -> int:
    """Runs of pairs (sorted by candidate position) adjacent in both texts."""
    return sum(1 for a, b in itertools.pairwise(pairs) if b[0] != a[0] + 1 or b[1] != a[1] + 1) + (1 if pairs else 0)


def single_score(candidate: list[str], reference: list[str], alpha: float, beta: float, gamma: float, synonyms: Callable[[str], frozenset[str]]) -> float:
    """METEOR of one tokenised candidate against one tokenised reference."""
    exact, rest_candidate, rest_reference = _align(list(enumerate(candidate)), list(enumerate(reference)), str.__eq__)
    stem = _stem()
    stemmed, rest_candidate, rest_reference = _align(
        [(i, stem(w)) for i, w in rest_candidate], [(j, stem(w)) for j, w in rest_reference], str.__eq__
    )
    synonym, _, _ = _align(rest_candidate, rest_reference, lambda c, r: c == r or ("_" not in r and r in synonyms(c)))
    pairs = sorted(exact + stemmed + synonym, key=lambda pair: pair[0])
    if not pairs or not candidate or not reference:
        return 0.0
    precision, recall = len(pairs) / len(candidate), len(pairs) / len(reference)
    denominator = alpha * precision + (1 - alpha) * recall
    if denominator == 0:
        return 0.0
    fmean = precision * recall / denominator
    fragmentation = _chunks(pairs) / len(pairs)
    return float((1 - gamma * fragmentation**beta) * fmean)


def meteor(candidate: str, references: list[str], alpha: float = ALPHA, beta: float = BETA, gamma: float = GAMMA) -> float:
    """The best METEOR score of `candidate` over `references` (WordNet from `wordnet.directory()`)."""
    root = wordnet.directory()
    if root is None:
        raise GraderError(INSTALL_HINT)
    lookup = wordnet.load(root).synonyms
    words = tokens(candidate)
    return max(single_score(words, tokens(reference), alpha, beta, gamma, lookup) for reference in references)


def _parameter(ctx: AssertionContext, name: str, default: float) -> float:
    value: Any = (ctx.assertion.model_extra or {}).get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GraderError(f"meteor {name} must be a number, got {js_string(value)}")
    return float(value)


@assertion("meteor", handles_inverse=True, default_threshold=0.5, keys=("alpha", "beta", "gamma"))
async def meteor_assertion(ctx: AssertionContext) -> Grade:
    value: Any = ctx.value
    references = value if isinstance(value, list) else [value]
    if not all(isinstance(r, str) for r in references):
        raise GraderError('"meteor" assertion must have a string or array of strings value')
    if not ctx.output_text or not references:
        raise GraderError("meteor needs a non-empty output and at least one reference (Invalid inputs)")
    threshold = ctx.effective_threshold
    assert threshold is not None, "meteor has a default threshold"
    alpha, beta, gamma = (_parameter(ctx, name, default) for name, default in (("alpha", ALPHA), ("beta", BETA), ("gamma", GAMMA)))
    score = meteor(ctx.output_text, references, alpha, beta, gamma)
    passed = score < threshold if ctx.inverse else score >= threshold
    reason = "METEOR assertion passed" if passed else f"METEOR score {js_fixed(score, 4)} did not meet threshold {js_string(threshold)}"
    return Grade(passed, 1.0 - score if ctx.inverse else score, reason)
