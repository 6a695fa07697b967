"""Comparison assertions over all outputs (prompts x providers) of one test row.

`select-best`: one grader call sees every output and names the best by its index; the chosen
output passes (score 1), the others fail (score 0). The grader's token usage is counted once, on
the first output's result. An index that is missing, ambiguous or out of range is an ERROR for all.

`max-score`: no grader call. Each output's score is the average (or sum) of its other assertions'
scores, weighted per assertion type (`value: {method, weights, threshold}`); the first highest
output passes if it reaches `threshold`, every other output fails with score 0.
"""

from __future__ import annotations

import re
from typing import Any

from ci_grade.errors import GraderError, VerdictError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.registry import assertion
from ci_grade.grading.scoring import reaches
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.grading.verdicts import find_objects, not_text, parse_number
from ci_grade.results.models import AssertionResult

COMPARISON_TYPES = {"select-best", "max-score"}
_INDEX_KEYS = ("best", "index", "winner", "choice", "selected")
_DECOR = r"""[\s>#*_`"'(\[-]*"""
_TAIL = r"""[\s*_`"'.!)\]]*$"""
_OUTPUT = r"(?:(?:output|option|response|candidate|answer|text|number|index|no\.?)\s*)?#?\s*"
_INDEX_LINES = (
    # "1", "**0**", "Output 1", "#1"
    re.compile(rf"^{_DECOR}{_OUTPUT}(\d+){_TAIL}", re.IGNORECASE),
    # "Best: 1", "The best is 1", "The best output is output 1", "Final answer: 1", "Winner - Output 2"
    re.compile(
        rf"^{_DECOR}(?:the\s+)?(?:final\s+)?(?:best|winner|answer|choice|selection|selected|chosen|pick|index)"
        rf"(?:\s+(?:output|one|response|answer|choice|option))?\s*(?:is|:|=|-|–)?\s*{_OUTPUT}(\d+){_TAIL}",
        re.IGNORECASE,
    ),
    # "Output 1 is best", "Output 1 is the best one.", "1 is the winner"
    re.compile(rf"^{_DECOR}{_OUTPUT}(\d+)\s+(?:is|was)\s+(?:the\s+)?(?:best|winner)\b[^0-9\n]*$", re.IGNORECASE),
)


def _reject_inverse(ctx: AssertionContext) -> None:
    if ctx.inverse:
        raise GraderError(f"{ctx.base_type} compares outputs and cannot be inverted with not-")


def parse_index(reply: Any, count: int) -> int:
    """The chosen output's index: a JSON `best`/`index` field, a bare number, or index lines that agree
    ("1", "Best: 1", "The best is 1", "Output 1 is best")."""
    index = _index_from(reply)
    if index is None or not 0 <= index < count:
        raise VerdictError(f"grader chose output {index if index is not None else '?'}, but there are outputs 0..{count - 1}")
    return index


def _index_from(reply: Any) -> int | None:
    if isinstance(reply, dict):
        return _index_in(reply)
    if isinstance(reply, int | float) and not isinstance(reply, bool) and float(reply).is_integer():
        return int(reply)
    if not isinstance(reply, str):
        raise not_text(reply, "an output index")
    text = reply.strip()
    number = parse_number(text)
    if number is not None and number.is_integer():  # a bare number, "1.0" too
        return int(number)
    chosen = {i for found in find_objects(text) if (i := _index_in(found.value)) is not None}
    if len(chosen) > 1:
        raise VerdictError(f"grader reply names several outputs as best: {sorted(chosen)}")
    lines = {int(m.group(1)) for line in text.splitlines() for pattern in _INDEX_LINES if (m := pattern.match(line))}
    if chosen:
        if lines - chosen:
            raise VerdictError(f"grader reply names output {chosen.pop()} in JSON but {sorted(lines - chosen)} elsewhere")
        return chosen.pop()
    if len(lines) > 1:
        raise VerdictError(f"grader reply names several outputs as best: {sorted(lines)}")
    if not lines:
        raise VerdictError(f"grader reply holds no output index: {excerpt(text, 200)}")
    return lines.pop()


def _index_in(value: dict[str, Any]) -> int | None:
    for key in _INDEX_KEYS:
        if key in value:
            number = parse_number(value[key])
            if number is None or not number.is_integer():
                raise VerdictError(f"grader's {key!r} is not an output index: {value[key]!r}")
            return int(number)
    return None


@assertion("select-best", comparison=True, grader="text", handles_inverse=True, invertible=False)
async def select_best(contexts: list[AssertionContext]) -> list[Grade]:
    first = contexts[0]
    _reject_inverse(first)
    criteria = first.value
    if not isinstance(criteria, str) or not criteria.strip():
        raise GraderError("select-best needs a string value (the criteria for the best output)")
    if len(contexts) < 2:
        raise GraderError("select-best needs at least two outputs of the same test to compare (prompts x providers)")
    outputs = [c.output_text for c in contexts]
    variables = {**first.vars, "criteria": criteria, "outputs": [try_parse(o) for o in outputs]}
    builtin = {"output_blocks": [fence(o) for o in outputs]}
    tally = GraderSession(first)
    prompt, schema = tally.prompt("select-best", variables, builtin)
    reply = await tally.ask(prompt, schema=schema)
    with tally.reading(reply):
        best = parse_index(reply, len(contexts))
    grades = []
    for index in range(len(contexts)):
        chosen = index == best
        reason = f"Output selected as the best: {criteria}" if chosen else f"Output not selected (output {best} was chosen): {criteria}"
        metadata = {"selectedIndex": best, "graderReply": excerpt(reply, 500)}
        if index == 0:
            grades.append(tally.grade(chosen, 1.0 if chosen else 0.0, reason, metadata=metadata))
        else:
            grades.append(Grade(chosen, 1.0 if chosen else 0.0, reason, grader=tally.grader, metadata=metadata))
    return grades


def _max_score_config(value: Any) -> tuple[str, dict[str, float], float | None]:
    config = value if value is not None else {}
    if not isinstance(config, dict):
        raise GraderError("max-score's value must be a mapping {method, weights, threshold} (or empty)")
    unknown = sorted(set(config) - {"method", "weights", "threshold"})
    if unknown:
        raise GraderError(f"max-score's value has unknown keys {unknown}; use method, weights, threshold")
    method = config.get("method", "average")
    if method not in ("average", "sum"):
        raise GraderError(f"max-score's method must be 'average' or 'sum', got {method!r}")
    weights = config.get("weights") or {}
    if not isinstance(weights, dict) or any(parse_number(w) is None for w in weights.values()):
        raise GraderError("max-score's weights must map assertion types to numbers")
    threshold = config.get("threshold")
    if threshold is not None and parse_number(threshold) is None:
        raise GraderError(f"max-score's threshold must be a number, got {threshold!r}")
    return method, {str(k): float(parse_number(w) or 0.0) for k, w in weights.items()}, None if threshold is None else parse_number(threshold)


def aggregate_row(components: list[AssertionResult], method: str, weights: dict[str, float]) -> tuple[float, int, float]:
    """(score, assertions counted, total weight) over one row's non-comparison assertions."""
    counted = [c for c in components if c.type.removeprefix("not-") not in COMPARISON_TYPES]
    total_weight = sum(weights.get(c.type, 1.0) for c in counted)
    weighted = sum(c.score * weights.get(c.type, 1.0) for c in counted)
    if method == "sum":
        return weighted, len(counted), total_weight
    return (weighted / total_weight if total_weight > 0 else 0.0), len(counted), total_weight


@assertion("max-score", comparison=True, handles_inverse=True, invertible=False)
async def max_score(contexts: list[AssertionContext]) -> list[Grade]:
    first = contexts[0]
    _reject_inverse(first)
    method, weights, threshold = _max_score_config(first.value)
    if not any(c.type.removeprefix("not-") not in COMPARISON_TYPES for ctx in contexts for c in ctx.components):
        raise GraderError("max-score needs at least one other assertion (besides max-score and select-best) to aggregate scores from")
    scored: list[tuple[float, int, float] | None] = []
    for ctx in contexts:
        broken = [c for c in ctx.components if c.status == "error" and c.type.removeprefix("not-") not in COMPARISON_TYPES]
        scored.append(None if broken else aggregate_row(ctx.components, method, weights))
    candidates = [(i, s[0]) for i, s in enumerate(scored) if s is not None]
    if not candidates:
        raise GraderError("max-score: no output could be scored (their assertions could not be graded)")
    best_index, best = max(candidates, key=lambda item: (item[1], -item[0]))
    met = threshold is None or reaches(best, threshold)
    grades = []
    for index, (ctx, entry) in enumerate(zip(contexts, scored, strict=True)):
        if entry is None:
            broken_types = sorted({c.type for c in ctx.components if c.status == "error"})
            grades.append(Grade(False, 0.0, f"max-score cannot score this output: {', '.join(broken_types)} could not be graded", error=True))
            continue
        score, count, total_weight = entry
        metadata = {"maxScore": score, "assertionCount": count, "totalWeight": total_weight, "method": method}
        if index == best_index and met:
            grades.append(Grade(True, 1.0, f"Selected as highest scoring output (score: {score:.3f})", named_scores={"maxScore": score}, metadata=metadata))
        elif index == best_index:
            grades.append(Grade(False, 0.0, f"Not selected - score {score:.3f} below threshold {threshold:g}", named_scores={"maxScore": score}, metadata=metadata))
        else:
            grades.append(Grade(False, 0.0, f"Not selected (score: {score:.3f}, max: {best:.3f})", named_scores={"maxScore": score}, metadata=metadata))
    return grades
