"""Run a plan: render prompts, call providers, grade outputs, all concurrently and bounded.

Every planned row ends as exactly one TestResult, whatever fails: a provider error, a broken
transform, a grader outage or a bug in one assertion becomes an ERROR row with its reason and
the run goes on. Comparison assertions (select-best, max-score) are graded once all rows of a
test are done. Each row has a deadline (evaluateOptions.timeoutMs, else 15 minutes; 0 for none);
a run stopped early (`stop.Stop`: a signal or the run's time limit) records the rows it did
not finish as ERROR rows saying why.

Rows are started in plan order through a window (`window.RowWindow`): a row's task exists only
from a little before it can run until it ends, so a run's memory does not grow with its rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ci_grade.config.models import Assertion, TestCase
from ci_grade.errors import ScriptError, TemplateError, TransformError
from ci_grade.grading import engine, registry
from ci_grade.grading.context import RunContext
from ci_grade.grading.graders import GraderResolver
from ci_grade.grading.transforms import apply_transform
from ci_grade.plan.build import Plan, PlannedRow
from ci_grade.providers import budget
from ci_grade.providers.base import CallContext, ProviderResponse
from ci_grade.providers.budget import Budget
from ci_grade.providers.cache import ResponseCache
from ci_grade.providers.limiter import ADAPTIVE_CEILING, Limiter
from ci_grade.providers.registry import ProviderPool
from ci_grade.results.models import EvalRun, PromptInfo, ProviderInfo, SourceRef, TestResult
from ci_grade.results.promptfoo import row_to_promptfoo
from ci_grade.results.spool import RowSpool
from ci_grade.results.summary import summarize
from ci_grade.results.usage import TokenUsage
from ci_grade.run import collect, prompt_functions, row_vars
from ci_grade.run.conversation import Conversations, template_of
from ci_grade.run.hooks import Hooks, apply_after_each
from ci_grade.run.stop import Stop
from ci_grade.run.window import RowWindow, window_size
from ci_grade.templating import nunjucks
from ci_grade.tracing import sanitize
from ci_grade.tracing.session import TraceContext, Tracing

Progress = Callable[[TestResult, int, int], None]
_UNORDERED: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()
DEFAULT_ROW_TIMEOUT_MS = 15 * 60 * 1000


@dataclass
class RunOptions:
    env: Mapping[str, str]
    base_dir: Path
    concurrency: int | None = None
    """Rows in flight and each provider's calls in flight, a hard cap (`-j`); None: adaptive, see
    `providers.limiter` (up to ADAPTIVE_CEILING rows, each provider finding its own limit)."""
    delay_ms: int = 0
    """promptfoo's delay: after each call a provider answers (not from the cache), unless the
    provider sets its own `delay`; tests run one at a time."""
    timeout_ms: int | None = DEFAULT_ROW_TIMEOUT_MS
    env_overrides: dict[str, str] = field(default_factory=dict)
    progress: Progress | None = None
    cache: ResponseCache | None = None
    stop: Stop = field(default_factory=Stop)
    budget: Budget | None = None
    """The run's spending limit (`--max-cost`): rows whose calls it refuses are recorded as not run."""
    hooks: Hooks | None = None
    """The config's extension hooks (beforeEach and afterEach run per row)."""
    release_rows: bool = False
    """The run takes the plan's rows (`plan.rows` is emptied) and lets each go once it is stored,
    so a test's models are freed as its rows end (for a caller that reads no row after the run)."""
    tracing: Tracing | None = None
    """The run's tracing (started by the caller): each row gets a trace context and its spans."""


@dataclass
class _Row:
    planned: PlannedRow
    result: TestResult
    grading_input: engine.GradingInput | None = None
    output: Any = None
    stopped: bool = False


async def run_plan(plan: Plan, options: RunOptions) -> EvalRun:
    """Run every row of `plan`; returns the results (never raises for a single row's failure)."""
    started = time.perf_counter()
    concurrency = 1 if options.delay_ms > 0 else None if options.concurrency is None else max(1, options.concurrency)
    pool = ProviderPool(options.env, max_concurrency=concurrency, base_dir=options.base_dir, cache=options.cache, budget=options.budget)
    graders = GraderResolver(pool, options.env)
    run_context = RunContext(env=options.env, base_dir=options.base_dir, graders=graders, env_overrides=options.env_overrides)
    rows_in_flight = Limiter(concurrency or ADAPTIVE_CEILING)  # FIFO; unlike asyncio.Semaphore, no O(waiters) work per row
    conversations = Conversations(plan.rows, options.env)
    planned_rows: list[PlannedRow | None] = list(plan.rows)
    if options.release_rows:
        plan.rows.clear()
    done = 0
    total = len(planned_rows)
    spool = RowSpool(total)

    async def one(position: int, planned: PlannedRow) -> _Row | None:
        nonlocal done
        async with window.waiting(conversations.turn(planned)) if conversations.ordered(planned) else _UNORDERED, rows_in_flight.slot():
            with budget.row_scope() as mark:
                row = await _run_row_with_timeout(planned, pool, run_context, options, conversations)
            if mark.refused is not None:
                _not_run(row, mark.refused)
            conversations.store(planned, row.result.output)
        done += 1
        if options.progress:
            options.progress(row.result, done, total)
        if _compares(planned):
            return row  # graded with the test's other rows at the end
        collect.store(spool, position, row.result)
        if options.release_rows:
            planned_rows[position] = None
        return None

    stop = options.stop
    window = RowWindow(planned_rows, one, window_size(concurrency))
    try:
        await stop.wait([asyncio.create_task(window.run())])
        rows = _unstored(window, planned_rows, spool, stop)
        graded: set[int] = set()
        if not stop.requested:
            await stop.wait([asyncio.create_task(_grade_comparisons(list(rows.values()), run_context, graded))])
        if stop.requested:
            _ungraded_comparisons(list(rows.values()), graded, stop)
    finally:
        slowed = pool.slowed_down()
        await pool.aclose()
    for position, row in rows.items():
        collect.store(spool, position, row.result)
    run = EvalRun(results=spool, stats=summarize(spool.summaries()))
    run.warnings += slowed
    if options.budget is not None and options.budget.refused:
        not_run = sum(1 for summary in spool.summaries() if summary.not_run)
        run.warnings.append(f"{options.budget.reason().removeprefix('not run: ')}: {not_run} of {total} rows were not run (or not fully graded) and are recorded as errors")
    unfinished = sum(1 for row in rows.values() if row.stopped)
    if unfinished:
        run.warnings.append(f"{stop.reason}: {unfinished} of {total} rows did not finish and are recorded as errors")
    run.stats.duration_ms = (time.perf_counter() - started) * 1000
    run.info.graders = sorted(graders.used)
    run.info.grader_templates = dict(sorted(run_context.templates.items()))
    return run


def _unstored(window: RowWindow[PlannedRow, _Row | None], planned: list[PlannedRow | None], spool: RowSpool, stop: Stop) -> dict[int, _Row]:
    """The rows not in the spool yet, by plan position: those held for comparisons, and the
    rows of tasks that failed or that the run stopped before they finished (or started).
    Only a stored row's planned row may have been let go."""
    return {position: _row_of(window.outcome(position), row, stop) for position, row in enumerate(planned) if row is not None and not spool.has(position)}


def _row_of(outcome: _Row | BaseException | None, planned: PlannedRow, stop: Stop) -> _Row:
    """The row's outcome; a row the run stopped before it finished is an ERROR row saying why."""
    if isinstance(outcome, _Row):
        return outcome
    if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
        return _error_row(planned, planned.prompt.raw, f"{type(outcome).__name__}: {outcome}")
    row = _error_row(planned, planned.prompt.raw, f"{stop.reason} before this row finished")
    row.stopped = True
    return row


async def _run_row_with_timeout(planned: PlannedRow, pool: ProviderPool, run: RunContext, options: RunOptions, conversations: Conversations) -> _Row:
    timeout_ms = options.timeout_ms
    if not timeout_ms:
        return await _run_row(planned, pool, run, conversations, options.delay_ms, options.tracing, options.hooks)
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            return await _run_row(planned, pool, run, conversations, options.delay_ms, options.tracing, options.hooks)
    except TimeoutError:
        result = _base_result(planned, planned.prompt.raw)
        result.status, result.error = "error", f"test timed out after {timeout_ms} ms"
        result.reason = result.error
        return _Row(planned, result)


async def _run_row(
    planned: PlannedRow, pool: ProviderPool, run: RunContext, conversations: Conversations, delay_ms: int, tracing: Tracing | None = None, hooks: Hooks | None = None,
) -> _Row:
    if not hooks:
        return await _run_row_unhooked(planned, pool, run, conversations, delay_ms, tracing)
    try:
        context = await hooks.run("beforeEach", {"test": _test_data(planned.test)})
        if context["test"] != _test_data(planned.test):
            test = TestCase.model_validate(context["test"])
            planned = dataclasses.replace(planned, test=test, vars=test.vars or {}, shown_vars=None)
    except (ScriptError, ValidationError) as exc:
        return _error_row(planned, planned.prompt.raw, f"beforeEach: {exc}")
    row = await _run_row_unhooked(planned, pool, run, conversations, delay_ms, tracing)
    try:
        context = await hooks.run("afterEach", {"test": _test_data(planned.test), "result": row_to_promptfoo(row.result)})
        apply_after_each(row.result, context["result"])
    except ScriptError as exc:
        _fail_row(planned, row.result, f"afterEach: {exc}")
    return row


def _test_data(test: TestCase) -> dict[str, Any]:
    return test.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


async def _run_row_unhooked(planned: PlannedRow, pool: ProviderPool, run: RunContext, conversations: Conversations, delay_ms: int, tracing: Tracing | None) -> _Row:
    if tracing is None:
        return await _run_traced_row(planned, pool, run, conversations, delay_ms, None)
    trace = tracing.open(_test_case_id(planned), _trace_metadata(planned))
    try:
        return await _run_traced_row(planned, pool, run, conversations, delay_ms, (tracing, trace))
    finally:
        tracing.store.close(trace.trace_id)


def _test_case_id(planned: PlannedRow) -> str:
    """promptfoo's: the test's `metadata.testCaseId`, else `<test index>-<prompt column>`."""
    metadata = planned.test.metadata if isinstance(planned.test.metadata, dict) else {}
    given = metadata.get("testCaseId")
    return str(given) if given else f"{planned.test_index}-{planned.column_index if planned.column_index is not None else planned.prompt_index}"


def _trace_metadata(planned: PlannedRow) -> dict[str, Any]:
    """What promptfoo records with a row's trace."""
    return {
        "testIdx": planned.test_index,
        "promptIdx": planned.column_index if planned.column_index is not None else planned.prompt_index,
        "providerId": planned.provider.id,
        "repeatIndex": planned.repeat_index,
        "vars": planned.shown_vars if planned.shown_vars is not None else planned.vars,
    }


async def _run_traced_row(planned: PlannedRow, pool: ProviderPool, run: RunContext, conversations: Conversations, delay_ms: int, traced: tuple[Tracing, TraceContext] | None) -> _Row:
    template = template_of(planned)
    try:
        planned = await row_vars.prepare(planned, template, run.base_dir, conversations)
    except ScriptError as exc:
        return _error_row(planned, template, str(exc))
    test = planned.test
    prompt_config = None
    if planned.prompt.function:
        try:
            template, prompt_config = await prompt_functions.template(planned.prompt.function, planned.vars, planned.provider, run.base_dir, planned.prompt.config)
        except ScriptError as exc:
            return _error_row(planned, template, f"prompt {planned.prompt.label!r}: {exc}")
    try:
        prompt = nunjucks.render_prompt(template, planned.vars, run.env_overrides)
    except TemplateError as exc:
        return _error_row(planned, template, f"prompt {planned.prompt.label!r}: {exc}")
    result = _base_result(planned, prompt)
    try:
        response = await _respond(planned, prompt, pool, delay_ms, prompt_config, traced[1] if traced else None)
        conversations.record(planned, prompt, response)
        trace = None
        if traced is not None:
            tracing, row_trace = traced
            trace = await tracing.collect(row_trace, wait=not response.error and registry.uses_trace(test.assert_ or []))
            result.trace = sanitize.for_results(trace)
        result.latency_ms = response.latency_ms
        result.cached = response.cached
        result.finish_reason = response.finish_reason
        result.token_usage = response.token_usage
        result.cost = response.cost
        result.response_metadata = response.metadata
        result.output = response.output
        if response.error:
            return _fail_row(planned, result, response.error)
        if response.output is None:
            return _fail_row(planned, result, "provider returned no output")
        if planned.provider.transform:
            context = {"vars": planned.vars, "prompt": {"label": planned.prompt.label, "raw": prompt}, "metadata": response.metadata}
            response.output = await apply_transform(planned.provider.transform, response.output, context, run.base_dir)
            result.output = response.output
        grading_input = engine.GradingInput(
            test, conversations.graded_variables(planned), prompt, planned.prompt.label, response, planned.provider,
            trace=trace, traceparent=traced[1].child() if traced else None,
        )
        graded = await engine.grade(grading_input, run)
    except TransformError as exc:
        return _fail_row(planned, result, f"provider transform failed: {exc}")
    except Exception as exc:  # never lose a row to an unexpected failure
        return _fail_row(planned, result, f"{type(exc).__name__}: {exc}")
    result.output = graded.output
    result.status = graded.status
    result.score = graded.score
    result.reason = graded.reason
    result.named_scores = graded.named_scores
    result.named_score_weights = graded.named_score_weights
    result.assertions = graded.assertions
    result.grading_token_usage = graded.token_usage
    result.grading_cost = graded.cost
    if graded.status == "error":
        result.error = graded.reason
    return _Row(planned, result, grading_input, graded.output)


LOGPROB_TYPES = frozenset({"perplexity", "perplexity-score"})


def _grades_logprobs(assertions: list[Assertion]) -> bool:
    """Whether an assertion (in an assert-set too) grades the output's token log probabilities."""
    return any(a.base_type in LOGPROB_TYPES or _grades_logprobs(a.assert_ or []) for a in assertions)


async def _respond(
    planned: PlannedRow, prompt: str, pool: ProviderPool, delay_ms: int, prompt_config: dict[str, Any] | None = None, trace: TraceContext | None = None,
) -> ProviderResponse:
    """The provider's answer; `prompt_config` (from a prompt function) is laid over its config."""
    test = planned.test
    if test.providerOutput is not None:
        return ProviderResponse(output=test.providerOutput, token_usage=TokenUsage(), cost=0.0)
    spec = planned.provider
    if test.provider is not None:
        from ci_grade.providers.registry import as_spec

        spec = as_spec(test.provider)
    if prompt_config:
        spec = spec.model_copy(update={"config": {**spec.config, **prompt_config}})
    provider = pool.get(spec)
    conversation = (test.metadata or {}).get("conversationId")
    context = CallContext(vars=planned.vars, prompt_label=planned.prompt.label, prompt_raw=planned.prompt.raw, logprobs=_grades_logprobs(test.assert_ or []),
                          conversation_id=str(conversation) if isinstance(conversation, str | int | float) and not isinstance(conversation, bool) and conversation != "" else None)
    if trace is not None:
        context.traceparent, context.evaluation_id, context.test_case_id = trace.traceparent, trace.evaluation_id, trace.test_case_id
    response = await provider.call(prompt, context)
    delay = spec.delay if spec.delay is not None else delay_ms  # promptfoo's: the provider's own first
    if delay and not response.cached:
        await asyncio.sleep(delay / 1000)
    return response


def _base_result(planned: PlannedRow, prompt: str) -> TestResult:
    test = planned.test
    loc = planned.location
    provider_id = test.own_provider_id or planned.provider.id
    return TestResult(
        fixed_output=test.providerOutput is not None or provider_id == "echo",
        reproducible_grading=registry.reproducible(test.assert_ or []),
        test_id=planned.test_id,
        fingerprint=planned.fingerprint,
        description=test.description,
        test_index=planned.test_index,
        prompt_index=planned.prompt_index,
        provider_index=planned.provider_index,
        column_index=planned.column_index,
        repeat_index=planned.repeat_index,
        vars=_shown_vars(planned),
        prompt=PromptInfo(raw=prompt, label=planned.prompt.label, key=planned.prompt.key, template=planned.prompt.raw),
        provider=ProviderInfo(id=planned.provider.id, label=planned.provider.label),
        status="error",
        metadata=test.metadata or {},
        location=SourceRef(file=loc.file, line=loc.line) if loc else None,
        test_case=_test_case(planned),
    )


def _shown_vars(planned: PlannedRow) -> dict[str, Any]:
    """The variables results record: as the config writes them (promptfoo's `vars`), with those
    added at run time (`_conversation`, stored outputs, var loaders) as they were."""
    shown = planned.shown_vars
    if shown is None:
        return planned.vars
    return {key: shown.get(key, value) for key, value in planned.vars.items()}


def _test_case(planned: PlannedRow) -> dict[str, Any]:
    dumped = planned.test.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    if planned.shown_vars is not None and "vars" in dumped:
        dumped["vars"] = planned.shown_vars
    return dumped


def _error_row(planned: PlannedRow, prompt: str, message: str) -> _Row:
    return _fail_row(planned, _base_result(planned, prompt), message)


def _fail_row(planned: PlannedRow, result: TestResult, message: str) -> _Row:
    result.status = "error"
    result.error = message
    result.reason = message
    result.score = 0.0
    return _Row(planned, result)


def _not_run(row: _Row, reason: str) -> None:
    """A row the budget cut short (its call or a grader's was refused): an ERROR saying so."""
    _fail_row(row.planned, row.result, reason)
    row.result.not_run = "budget"


def _compares(planned: PlannedRow) -> bool:
    """Whether the row's test has comparison assertions (select-best, max-score)."""
    return any(_is_comparison(a.base_type) for a in (planned.test.assert_ or []))


def _comparison_groups(rows: list[_Row]) -> dict[int, list[_Row]]:
    """The rows of each test that has comparison assertions, by test index."""
    groups: dict[int, list[_Row]] = defaultdict(list)
    for row in rows:
        if _compares(row.planned):
            groups[row.planned.test_index].append(row)
    return groups


async def _grade_comparisons(rows: list[_Row], run: RunContext, graded: set[int]) -> None:
    """select-best / max-score: grade all outputs of one test together, then merge per row;
    `graded` collects the tests whose comparisons are complete."""
    for index, members in _comparison_groups(rows).items():
        for assertion in [a for a in (members[0].planned.test.assert_ or []) if _is_comparison(a.base_type)]:
            results = await engine.grade_comparison(assertion, [(r.grading_input, r.output, r.result) for r in members], run)
            for row, result in zip(members, results, strict=True):
                engine.merge_comparison(row.result, result)
        graded.add(index)


def _ungraded_comparisons(rows: list[_Row], graded: set[int], stop: Stop) -> None:
    """Rows whose comparisons the stopped run did not finish are errors: never a pass without them."""
    for index, members in _comparison_groups(rows).items():
        for row in members:
            if index not in graded and row.result.status != "error":
                _fail_row(row.planned, row.result, f"{stop.reason} before the comparison assertions were graded")
                row.stopped = True


def _is_comparison(base_type: str) -> bool:
    spec = registry.get(base_type)
    return bool(spec and spec.comparison)
