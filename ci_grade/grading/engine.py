"""The grading engine shared by every assertion type.

For one output it applies the test transform and each assertion's transform, renders values,
runs handlers (concurrently, bounded), applies `not-`, weights, metrics and `assert-set`, and
aggregates the test verdict with promptfoo's rules: a weighted score; with a threshold the score
decides, otherwise every assertion must pass. An assertion that cannot be graded is an ERROR:
never a pass, never inverted; a test with such an error (weight > 0) is an ERROR row.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

from ci_grade.config import files
from ci_grade.config.models import Assertion, ProviderSpec, TestCase
from ci_grade.errors import ConfigError, GraderError, TemplateError, TransformError
from ci_grade.grading import registry
from ci_grade.grading.context import AssertionContext, Grade, Measure, RunContext
from ci_grade.grading.grader_prompts import load_template
from ci_grade.grading.scoring import invert, shown
from ci_grade.grading.session import GraderSession
from ci_grade.grading.transforms import apply_transform, is_script_ref, run_script
from ci_grade.js_values import js_fixed
from ci_grade.providers.base import ProviderResponse
from ci_grade.results.models import AssertionResult, Status, TestResult
from ci_grade.results.named_metrics import assertion_totals
from ci_grade.results.traces import Trace
from ci_grade.results.usage import TokenUsage
from ci_grade.templating import nunjucks
from ci_grade.templating.nunjucks import js_string

ASSERTION_CONCURRENCY = 4
_SCRIPT_TYPES = {"javascript", "python", "ruby"}


@dataclass
class GradingInput:
    """One output to grade, with everything assertions may look at."""

    test: TestCase
    vars: dict[str, Any]
    prompt: str
    prompt_label: str
    response: ProviderResponse
    provider: ProviderSpec | None = None
    trace: Trace | None = None
    traceparent: str | None = None
    """A trace context for the row's grader calls (see `tracing.session`)."""


@dataclass
class TestGrade:
    status: Status
    score: float
    reason: str
    named_scores: dict[str, float] = field(default_factory=dict)
    assertions: list[AssertionResult] = field(default_factory=list)
    output: Any = None
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0
    named_score_weights: dict[str, float] = field(default_factory=dict)


def script_context(inp: GradingInput, *, assertion: bool = False) -> dict[str, Any]:
    """The `context` argument promptfoo passes to transforms. An assertion's transform gets the
    rendered prompt as `prompt.label` too, as promptfoo passes it (`{label: prompt}`)."""
    return {
        "vars": inp.vars,
        "prompt": {"label": inp.prompt if assertion else inp.prompt_label, "raw": inp.prompt},
        "metadata": inp.response.metadata,
        "test": {"description": inp.test.description, "vars": inp.vars, "metadata": inp.test.metadata or {}},
    }


async def grade(inp: GradingInput, run: RunContext) -> TestGrade:
    """Grade one output against its test's assertions (comparison types are left for later)."""
    output = inp.response.output
    test_transform = inp.test.options.output_transform
    if test_transform:
        try:
            output = await apply_transform(test_transform, output, script_context(inp), run.base_dir)
        except TransformError as exc:
            return TestGrade("error", 0.0, f"options.{exc!s}", output=output)
    assertions = [a for a in (inp.test.assert_ or []) if not _is_comparison(a)]
    if not assertions:
        return TestGrade("pass", 1.0, "No assertions", output=output)
    results = await _grade_all(assertions, inp, output, run)
    totals = assertion_totals(results)
    status, score, reason = verdict(results, inp.test.threshold)
    usage, cost = grading_totals(results)
    named = {name: total.value for name, total in totals.items()}
    return TestGrade(status, score, reason, named, results, output, usage, cost, {name: total.weight for name, total in totals.items()})


def _is_comparison(assertion: Assertion) -> bool:
    spec = registry.get(assertion.base_type)
    return bool(spec and spec.comparison)


async def _grade_all(assertions: list[Assertion], inp: GradingInput, output: Any, run: RunContext) -> list[AssertionResult]:
    """The assertions' results in order: one after another, unless several of them wait on a
    model or a service, which then run concurrently (bounded)."""
    if sum(map(_waits, assertions)) < 2:
        return [await _grade_one(assertion, inp, output, run) for assertion in assertions]
    semaphore = asyncio.Semaphore(ASSERTION_CONCURRENCY)

    async def one(assertion: Assertion) -> AssertionResult:
        if assertion.type == "assert-set":
            return await _grade_set(assertion, inp, output, run)
        async with semaphore:
            return await grade_assertion(assertion, inp, output, run)

    return list(await asyncio.gather(*(one(a) for a in assertions)))


async def _grade_one(assertion: Assertion, inp: GradingInput, output: Any, run: RunContext) -> AssertionResult:
    if assertion.type == "assert-set":
        return await _grade_set(assertion, inp, output, run)
    return await grade_assertion(assertion, inp, output, run)


def _waits(assertion: Assertion) -> bool:
    """Whether grading it waits on a model or another service (an assert-set: any of its own)."""
    if assertion.type == "assert-set":
        return any(map(_waits, assertion.assert_ or []))
    spec = registry.get(assertion.base_type)
    return spec is not None and (spec.model_graded or not spec.reproducible)


async def _grade_set(assertion: Assertion, inp: GradingInput, output: Any, run: RunContext) -> AssertionResult:
    children = await _grade_all(list(assertion.assert_ or []), inp, output, run)
    status, score, reason, named = aggregate(children, assertion.threshold)
    usage, cost = grading_totals(children)
    result = AssertionResult(
        type="assert-set",
        metric=_render_metric(assertion.metric, inp.vars),
        weight=assertion.effective_weight,
        threshold=assertion.threshold,
        status=status,
        score=score,
        reason=reason,
        named_scores=named,
        token_usage=usage,
        cost=cost,
        children=children,
    )
    return result  # `weight: 0` makes a single assertion informational, never a set (as promptfoo)


async def grade_assertion(assertion: Assertion, inp: GradingInput, output: Any, run: RunContext) -> AssertionResult:
    """Grade one (non-set) assertion; every failure mode ends as a result, never an exception."""
    fields = {"type": assertion.type, "metric": _render_metric(assertion.metric, inp.vars), "weight": assertion.effective_weight, "threshold": assertion.threshold}
    try:
        spec = registry.get(assertion.base_type)
        if spec is None:
            raise GraderError(f"unknown assertion type {assertion.type!r}")
        ctx = await build_context(assertion, inp, output, run, spec)
        if assertion.inverse and not spec.invertible:
            raise GraderError(f"{assertion.type!r} cannot be inverted with not-")
        if spec.value is not None:
            spec.value.check(ctx.value, assertion.type, assertion.base_type)
        result = await (_graded(spec, ctx) if spec.graded else spec.handler(ctx))
        if assertion.inverse and not spec.handles_inverse and not result.error:
            result = Grade(not result.passed, 1.0 - result.score, result.reason, result.named_scores, result.token_usage, result.cost, result.grader, result.metadata)
        return _apply_weight(_from_grade(fields, ctx.value, result))
    except GraderError as exc:
        usage = exc.token_usage or TokenUsage()
        return AssertionResult(**fields, value=assertion.value, status="error", reason=exc.reason, grader=exc.grader, token_usage=usage, cost=exc.cost or 0.0, metadata=exc.metadata)
    except TransformError as exc:
        return AssertionResult(**fields, value=assertion.value, status="error", reason=str(exc))
    except Exception as exc:  # a bug or a bad value in one assertion must not sink the run
        return AssertionResult(**fields, value=assertion.value, status="error", reason=f"{type(exc).__name__}: {exc}")


async def _graded(spec: registry.AssertionType, ctx: AssertionContext) -> Grade:
    """The shared path of prompt-based types: the handler reads its grader's replies into a
    Measure through a session; the prompt's scoring rule, the threshold and `not-` decide."""
    session = GraderSession(ctx)
    measure: Measure = await spec.handler(ctx, session)
    scoring = load_template(spec.prompt or "").scoring
    if scoring is None:
        raise GraderError(f"grader prompt {spec.prompt!r} has no scoring section")
    threshold = ctx.effective_threshold
    passed = scoring.rule.passes(measure.score, threshold, measure.verdict)
    reason = measure.reason
    if threshold is not None:
        reason = reason.replace("{relation}", scoring.relation[0 if passed else 1]).replace("{threshold}", shown(threshold))
    score = measure.score
    if ctx.inverse:
        passed, score = invert(passed, score)
    return session.grade(passed, score, reason, named_scores=measure.named_scores, metadata=measure.metadata)


def _from_grade(fields: dict[str, Any], value: Any, grade: Grade) -> AssertionResult:
    """The result of an assertion (`fields`: type, metric, weight, threshold) that `grade` decided."""
    score = grade.score
    if grade.error:
        status: Status = "error"
    elif score is None or not isinstance(score, int | float) or not math.isfinite(score):
        status, grade.reason = "error", f"grader produced a non-numeric score ({score!r}); {grade.reason}".strip("; ")
        score = 0.0
    else:
        status = "pass" if grade.passed else "fail"
    return AssertionResult(
        **fields,
        value=value,
        status=status,
        score=float(score) if status != "error" else 0.0,
        reason=grade.reason,
        named_scores=grade.named_scores,
        grader=grade.grader,
        token_usage=grade.token_usage or TokenUsage(),
        cost=grade.cost or 0.0,
        metadata=grade.metadata,
        children=grade.children,
    )


def _apply_weight(result: AssertionResult) -> AssertionResult:
    """`weight: 0` is informational: it always passes (errors are still shown as errors)."""
    if result.weight == 0 and result.status == "fail":
        result.status = "pass"
    return result


async def build_context(assertion: Assertion, inp: GradingInput, output: Any, run: RunContext, spec: registry.AssertionType | None = None) -> AssertionContext:
    """Apply the assertion's transform and render its value."""
    if assertion.transform:
        output = await apply_transform(assertion.transform, output, script_context(inp, assertion=True), run.base_dir)
    value = await render_assertion_value(assertion, inp, output, run)
    return AssertionContext(
        assertion=assertion,
        value=value,
        output=output,
        vars=inp.vars,
        prompt=inp.prompt,
        prompt_label=inp.prompt_label,
        test=inp.test,
        response=inp.response,
        run=run,
        provider=inp.provider,
        provider_output=inp.response.output,
        default_threshold=spec.default_threshold if spec else None,
        trace=inp.trace,
        traceparent=inp.traceparent,
    )


async def render_assertion_value(assertion: Assertion, inp: GradingInput, output: Any, run: RunContext) -> Any:
    value = assertion.value
    if isinstance(value, str):
        if value.startswith("file://") and assertion.base_type not in _SCRIPT_TYPES:
            if is_script_ref(value):
                returned, result = await run_script(value, [output, script_context(inp)], run.base_dir, ("output", "context"), "get_value")
                return result if returned else None
            path = files.resolve(files.split_function(value)[0], run.base_dir)
            if not path.is_file():
                raise GraderError(f"value {files.not_a_file(path)}")
            try:
                if path.suffix in files.STRUCTURED_SUFFIXES:
                    return files.load_structured(path, None)
                return files.read_text(path).strip()
            except ConfigError as exc:  # grown over the size limit since the run began
                raise GraderError(f"value file: {exc}") from None
        if value.startswith("file://"):
            return value
        return _render(value, inp.vars, run.env_overrides)
    if isinstance(value, list):
        return [_render(v, inp.vars, run.env_overrides) if isinstance(v, str) else v for v in value]
    return value


_CONSTANTS: dict[str, str] = {}


def _render(text: str, variables: dict[str, Any], env_overrides: dict[str, str]) -> str:
    """A value rendered with the row's variables; text without tags renders the same for every row
    (once, as Jinja normalises newlines), so it is rendered once."""
    if "{" not in text:
        return text
    if "{{" in text or "{%" in text or "{#" in text:
        return nunjucks.render(text, variables, env_overrides)
    rendered = _CONSTANTS.get(text)
    if rendered is None:
        if len(_CONSTANTS) > 4096:
            _CONSTANTS.clear()
        rendered = _CONSTANTS[text] = nunjucks.render(text, variables, env_overrides)
    return rendered


def _render_metric(metric: str | None, variables: dict[str, Any]) -> str | None:
    if not metric:
        return metric
    try:
        return nunjucks.render(metric, variables)
    except TemplateError:
        return metric


def aggregate(results: list[AssertionResult], threshold: float | None) -> tuple[Status, float, str, dict[str, float]]:
    """promptfoo's test verdict over component results, with errors kept apart, and the named scores."""
    return (*verdict(results, threshold), named_scores(results))


def verdict(results: list[AssertionResult], threshold: float | None) -> tuple[Status, float, str]:
    """Status, score and reason over component results: errors first, then the threshold or every pass."""
    total_weight = sum(r.weight for r in results)
    weighted = sum(r.score * r.weight for r in results)
    score = weighted / total_weight if total_weight > 0 else (0.0 if results else 1.0)
    errors = [r for r in results if r.status == "error" and r.weight != 0]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return "error", score, f"{first.type} could not be graded: {first.reason}{more}"
    if threshold is not None:
        passed = score >= threshold
        sign = "≥" if passed else "<"
        return ("pass" if passed else "fail"), score, f"Aggregate score {js_fixed(score, 2)} {sign} {js_string(threshold)} threshold"
    failed = [r for r in results if r.status == "fail"]
    if failed:  # as promptfoo, the last failure's reason speaks for the test
        return "fail", score, failed[-1].reason or f"{failed[-1].type} failed"
    return "pass", score, "All assertions passed"


def named_scores(results: list[AssertionResult]) -> dict[str, float]:
    """Per metric: the weighted mean of its assertions (plain mean when all weights are 0)."""
    return {name: total.value for name, total in assertion_totals(results).items()}


def grading_totals(results: list[AssertionResult]) -> tuple[TokenUsage, float]:
    """Grader tokens and cost over results (a set's children are already in the set's totals)."""
    usage = TokenUsage()
    for result in results:
        used = result.token_usage
        if used.prompt or used.completion or used.total or used.cached or used.reasoning or used.num_requests:
            usage.add(used)
    return usage, sum(r.cost for r in results)


async def grade_comparison(
    assertion: Assertion,
    members: list[tuple[GradingInput | None, Any, TestResult]],
    run: RunContext,
) -> list[AssertionResult]:
    """Grade a comparison assertion across all outputs of one test (one result per member).

    Members whose row already errored get an error result; fewer than two gradable outputs is an
    error for all. Handlers put a shared grader call's usage on one grade only, so totals add up.
    """
    spec = registry.get(assertion.base_type)
    base = {"type": assertion.type, "value": assertion.value, "metric": assertion.metric, "weight": assertion.effective_weight, "threshold": assertion.threshold}
    valid = [(i, inp, output) for i, (inp, output, _) in enumerate(members) if inp is not None]
    results = [AssertionResult(status="error", reason="not compared: this output could not be produced or graded", **base) for _ in members]
    if spec is None or len(valid) < 2:
        for i, _inp, _output in valid:
            results[i].reason = f"{assertion.type} needs at least two outputs of the same test to compare (prompts x providers)"
        return results
    try:
        contexts = [await build_context(assertion, inp, output, run, spec) for _, inp, output in valid]
        for (i, _inp, _output), ctx in zip(valid, contexts, strict=True):
            ctx.components = members[i][2].assertions
        grades = await spec.handler(contexts)
    except GraderError as exc:
        for i, _inp, _output in valid:
            results[i].reason = exc.reason
            results[i].grader = exc.grader
        if valid:
            results[valid[0][0]].token_usage = exc.token_usage or TokenUsage()
            results[valid[0][0]].cost = exc.cost or 0.0
        return results
    except Exception as exc:
        for i, _inp, _output in valid:
            results[i].reason = f"{type(exc).__name__}: {exc}"
        return results
    for (i, inp, _output), grade_ in zip(valid, grades, strict=True):
        fields = {**base, "metric": _render_metric(assertion.metric, inp.vars)}
        results[i] = _apply_weight(_from_grade({k: v for k, v in fields.items() if k != "value"}, fields["value"], grade_))
        if len(valid) < len(members) and results[i].status == "pass":
            # not chosen among some is not chosen among all; chosen among some may not be the best of all
            results[i].status, results[i].score = "error", 0.0
            results[i].reason = f"chosen among {len(valid)} of {len(members)} outputs: the others could not be produced, so it may not be the best ({results[i].reason})"
    return results


def merge_comparison(row: TestResult, result: AssertionResult) -> None:
    """Fold a comparison result into its row: a lost comparison fails a passing row, score 0."""
    row.assertions.append(result)
    row.grading_token_usage.add(result.token_usage)
    row.grading_cost += result.cost
    if result.status != "error":
        if result.metric:
            row.named_scores[result.metric] = result.score
            row.named_score_weights[result.metric] = result.weight
        row.named_scores.update(result.named_scores)
        row.named_score_weights.update(dict.fromkeys(result.named_scores, result.weight))
    if row.status == "error" or result.weight == 0:
        return
    if result.status == "error":
        row.status, row.score = "error", 0.0  # as every ERROR row scores
        row.error = row.reason = f"{result.type} could not be graded: {result.reason}"
    elif result.status == "fail":
        row.status = "fail"
        row.score = result.score
        row.reason = result.reason
