"""promptfoo's results JSON (`promptfoo eval -o results.json`, summary version 3), both ways.

ci-grade writes the shape promptfoo's own tools read (`results.results[]` rows with `testCase`,
`prompt`, `provider`, `response`, `success`, `score`, `namedScores`, `failureReason`,
`gradingResult.componentResults[]`, and `results.stats`), adding its own fields under keys
promptfoo ignores. It reads the same shape back, including files written by promptfoo itself,
so a baseline or comparison can come from either tool.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ci_grade import __version__
from ci_grade.errors import ConfigError, UsageError
from ci_grade.results.derived_metrics import derive
from ci_grade.results.models import (
    AssertionResult,
    EvalRun,
    PromptInfo,
    ProviderInfo,
    RunInfo,
    SourceRef,
    TestResult,
)
from ci_grade.results.named_metrics import MetricTotal, add_parts
from ci_grade.results.summary import add_usage, summaries_of
from ci_grade.results.traces import Trace
from ci_grade.results.usage import TokenUsage

FAILURE_REASON = {"pass": 0, "fail": 1, "error": 2}


def _usage(usage: TokenUsage) -> dict[str, Any]:
    return {
        "total": usage.total,
        "prompt": usage.prompt,
        "completion": usage.completion,
        "cached": usage.cached,
        "numRequests": usage.num_requests,
        "completionDetails": {"reasoning": usage.reasoning, "acceptedPrediction": 0, "rejectedPrediction": 0},
    }


def _read_usage(data: Any) -> TokenUsage:
    if not isinstance(data, dict):
        return TokenUsage()
    details = data.get("completionDetails") or {}
    return TokenUsage(
        prompt=int(data.get("prompt") or 0),
        completion=int(data.get("completion") or 0),
        total=int(data.get("total") or 0),
        cached=int(data.get("cached") or 0),
        reasoning=int(details.get("reasoning") or 0) if isinstance(details, dict) else 0,
        num_requests=int(data.get("numRequests") or 0),
    )


def _component(result: AssertionResult, depth: int) -> dict[str, Any]:
    assertion = {"type": result.type, "value": result.value}
    for key, value in (("metric", result.metric), ("threshold", result.threshold)):
        if value is not None:
            assertion[key] = value
    if result.weight != 1.0:
        assertion["weight"] = result.weight
    component = {
        "pass": result.status == "pass",
        "score": result.score,
        "reason": result.reason,
        "namedScores": result.named_scores,
        "tokensUsed": _usage(result.token_usage),
        "assertion": assertion,
        "metadata": {**result.metadata, "ciGrade": {"status": result.status, "grader": result.grader, "cost": result.cost, "depth": depth}},
    }
    if result.children:  # an assert-set: its results inside it too, as promptfoo writes them
        component["componentResults"] = [_component(child, depth + 1) for child in result.children]
    return component


def _components(results: list[AssertionResult], depth: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for result in results:
        out.append(_component(result, depth))
        out.extend(_components(result.children, depth + 1))
    return out


@functools.lru_cache(maxsize=256)
def prompt_id(label: str) -> str:
    """promptfoo's prompt id: the sha256 of the prompt's label."""
    return hashlib.sha256(label.encode()).hexdigest()


def row_to_promptfoo(row: TestResult) -> dict[str, Any]:
    return {
        "id": f"{row.test_id}#{row.repeat_index}" if row.repeat_index else row.test_id,
        "testId": row.test_id,
        "testIdx": row.test_index,
        "promptIdx": row.prompt_index if row.column_index is None else row.column_index,
        "repeatIndex": row.repeat_index,
        "description": row.description,
        "promptId": prompt_id(row.prompt.label),
        "prompt": {"raw": row.prompt.raw, "label": row.prompt.label, "template": row.prompt.template},
        "provider": {"id": row.provider.id, "label": row.provider.label or ""},  # promptfoo writes "" for none
        "vars": row.vars,
        "testCase": row.test_case,
        "response": {
            "output": row.output,
            "tokenUsage": _usage(row.token_usage),
            "cached": row.cached,
            "cost": row.cost,
            "finishReason": row.finish_reason,
            "metadata": row.response_metadata,
        },
        "error": row.error or (row.reason if row.status == "fail" else None),  # promptfoo repeats a failure's reason
        "failureReason": FAILURE_REASON[row.status],
        "success": row.status == "pass",
        "score": row.score,
        "latencyMs": round(row.latency_ms, 3),
        "namedScores": row.named_scores,
        **({"traceId": row.trace.trace_id, "trace": row.trace.model_dump(mode="json", by_alias=True, exclude_none=True)} if row.trace else {}),
        "cost": row.cost or 0.0,  # the provider's, as promptfoo records it (grading's is metadata.ciGrade.gradingCost)
        "gradingResult": {
            "pass": row.status == "pass",
            "score": row.score,
            "reason": row.reason,
            "namedScores": row.named_scores,
            **({"namedScoreWeights": row.named_score_weights} if row.named_score_weights else {}),
            "tokensUsed": _usage(row.grading_token_usage),
            "componentResults": _components(row.assertions),
        },
        "metadata": {
            **row.metadata,
            "ciGrade": {
                "status": row.status,
                "fingerprint": row.fingerprint,
                "promptIndex": row.prompt_index,
                "promptKey": row.prompt.key,
                "providerIndex": row.provider_index,
                "gradingCost": row.grading_cost,
                "providerCost": row.cost,
                "location": row.location.model_dump() if row.location else None,
                "reproducibility": "reproducible" if row.reproducible else "sampled",
                "fixedOutput": row.fixed_output,
                "reproducibleGrading": row.reproducible_grading,
                **({"notRun": row.not_run} if row.not_run else {}),
            },
        },
    }


def _prompt_metrics(run: EvalRun) -> list[dict[str, Any]]:
    prompts: dict[tuple[str, str], dict[str, Any]] = {}
    totals: dict[tuple[str, str], dict[str, MetricTotal]] = {}
    for row in summaries_of(run.results):
        key = (row.prompt_key, row.provider)
        entry = prompts.get(key)
        if entry is None:
            entry = prompts[key] = {
                "raw": row.prompt_template,
                "label": row.prompt_label,
                "id": prompt_id(row.prompt_label),
                "provider": row.provider,
                "column": row.column,
                "metrics": {
                    "score": 0.0, "testPassCount": 0, "testFailCount": 0, "testErrorCount": 0,
                    "assertPassCount": 0, "assertFailCount": 0, "totalLatencyMs": 0.0,
                    "tokenUsage": TokenUsage(), "namedScores": {}, "namedScoresCount": {}, "namedScoreWeights": {}, "cost": 0.0,
                },
            }
        metrics = entry["metrics"]
        metrics["score"] += row.score
        metrics[{"pass": "testPassCount", "fail": "testFailCount", "error": "testErrorCount"}[row.status]] += 1
        passed = sum(1 for _, _, _, ok in row.flat_assertions() if ok)
        metrics["assertPassCount"] += passed
        metrics["assertFailCount"] += len(row.assertions) // 4 - passed
        metrics["totalLatencyMs"] += row.latency_ms
        add_usage(metrics["tokenUsage"], row.usage)
        metrics["cost"] += row.cost or 0.0
        add_parts(totals.setdefault(key, {}), row.metrics or ())
    for key, entry in prompts.items():
        metrics = entry["metrics"]
        metrics["tokenUsage"] = _usage(metrics["tokenUsage"])
        for name, total in totals[key].items():
            metrics["namedScores"][name] = total.weighted
            metrics["namedScoresCount"][name] = total.count
            metrics["namedScoreWeights"][name] = total.weight
        if run.info.derived_metrics:
            rows = metrics["testPassCount"] + metrics["testFailCount"] + metrics["testErrorCount"]
            derived = derive(metrics["namedScores"], rows, run.info.derived_metrics)
            metrics["namedScores"].update({name: value if math.isfinite(value) else None for name, value in derived.items()})  # NaN: null, as JSON.stringify
    return [{k: v for k, v in entry.items() if k != "column"} for entry in sorted(prompts.values(), key=lambda entry: entry["column"])]


def to_promptfoo(run: EvalRun, config: dict[str, Any] | None = None, *, rows: bool = True) -> dict[str, Any]:
    """The whole run in promptfoo's OutputFile shape (`rows=False`: `results.results` left empty,
    for a writer that streams the rows in)."""
    created = run.info.created_at or datetime.now(UTC).isoformat()
    token_usage = _usage(run.stats.token_usage)
    token_usage["assertions"] = _usage(run.stats.grading_token_usage)
    return {
        "evalId": f"eval-cigrade-{hashlib.sha256((created + run.info.config_hash).encode()).hexdigest()[:12]}",
        "results": {
            "version": 3,
            "timestamp": created,
            "results": [row_to_promptfoo(row) for row in run.results] if rows else [],
            "prompts": _prompt_metrics(run),
            "stats": {
                "successes": run.stats.successes,
                "failures": run.stats.failures,
                "errors": run.stats.errors,
                "tokenUsage": token_usage,
                "durationMs": round(run.stats.duration_ms),
                "cost": run.stats.cost + run.stats.grading_cost,
            },
        },
        "config": config or {},
        "shareableUrl": None,
        "metadata": {"ciGradeVersion": __version__, "exportedAt": datetime.now(UTC).isoformat(), "evaluationCreatedAt": created},
        "ciGrade": {
            "info": run.info.model_dump(mode="json"),
            "stats": {"providerCost": run.stats.cost, "gradingCost": run.stats.grading_cost},
            "warnings": run.warnings,
            "confirmations": [row_to_promptfoo(row) for row in run.confirmations],
        },
    }


# -- reading ------------------------------------------------------------------------------------


def from_promptfoo(data: dict[str, Any]) -> EvalRun:
    """Read a results JSON written by ci-grade or by promptfoo (summary v2 rows are not read)."""
    summary = data.get("results")
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), list):
        raise ValueError("not a promptfoo results file: expected results.results[]")
    ours = data.get("ciGrade") if isinstance(data.get("ciGrade"), dict) else None
    info = RunInfo.model_validate(ours["info"]) if ours and isinstance(ours.get("info"), dict) else RunInfo(source="promptfoo", created_at=str(summary.get("timestamp") or ""))
    traces = {t["traceId"]: t for t in data.get("traces") or [] if isinstance(t, dict) and isinstance(t.get("traceId"), str)}
    rows = [row_from_promptfoo(item, traces) for item in summary["results"] if isinstance(item, dict)]
    run = EvalRun(info=info, results=rows, stats=EvalRun.summarize(rows), warnings=list(ours.get("warnings") or []) if ours else [])
    stats = summary.get("stats")
    run.stats.duration_ms = float(stats.get("durationMs") or 0) if isinstance(stats, dict) else 0.0
    confirmations = ours.get("confirmations") if ours else None
    run.confirmations = [row_from_promptfoo(item) for item in confirmations if isinstance(item, dict)] if isinstance(confirmations, list) else []
    return run


def row_from_promptfoo(item: dict[str, Any], traces: dict[str, Any] | None = None) -> TestResult:
    """One row of a results JSON as a `TestResult` (its trace: its own `trace`, else promptfoo's
    top-level `traces` entry of its `traceId`)."""
    ours = (item.get("metadata") or {}).get("ciGrade") or {}
    prompt = item.get("prompt") or {}
    provider = item.get("provider") or {}
    if isinstance(provider, str):
        provider = {"id": provider}
    grading = item.get("gradingResult") or {}
    response = item.get("response") or {}
    status = ours.get("status") or ("error" if item.get("failureReason") == 2 else "pass" if item.get("success") else "fail")
    test_case = item.get("testCase") or {}
    description = item.get("description") or test_case.get("description")
    variables = item.get("vars") or test_case.get("vars") or {}
    label = prompt.get("label") or ""
    provider_key = provider.get("label") or provider.get("id") or ""
    test_id = item.get("testId") or _derived_id(description, variables, label, provider_key)
    metadata = {k: v for k, v in (item.get("metadata") or {}).items() if k != "ciGrade"}
    location = ours.get("location")
    return TestResult(
        test_id=test_id,
        fingerprint=ours.get("fingerprint") or _derived_id(None, variables, label, provider_key),
        description=description,
        test_index=int(item.get("testIdx") or 0),
        prompt_index=int(ours.get("promptIndex", item.get("promptIdx")) or 0),
        provider_index=int(ours.get("providerIndex") or 0),
        column_index=int(item.get("promptIdx") or 0),
        repeat_index=int(item.get("repeatIndex") or 0),
        vars=variables,
        prompt=PromptInfo(raw=str(prompt.get("raw") or ""), label=label, key=str(ours.get("promptKey") or item.get("promptId") or label), template=str(prompt.get("template") or "")),
        provider=ProviderInfo(id=str(provider.get("id") or ""), label=provider.get("label") or None),
        output=response.get("output"),
        status=status,
        score=float(item.get("score") or 0.0),
        named_scores={str(k): float(v) for k, v in (item.get("namedScores") or {}).items() if isinstance(v, int | float)},
        named_score_weights={str(k): float(v) for k, v in (grading.get("namedScoreWeights") or {}).items() if isinstance(v, int | float)},
        reason=str(grading.get("reason") or item.get("error") or ""),
        error=item.get("error") if status == "error" else None,
        latency_ms=float(item.get("latencyMs") or 0.0),
        cached=bool(response.get("cached")),
        finish_reason=response.get("finishReason"),
        token_usage=_read_usage(response.get("tokenUsage")),
        cost=ours.get("providerCost", response.get("cost")),
        grading_token_usage=_read_usage(grading.get("tokensUsed")),
        grading_cost=float(ours.get("gradingCost") or 0.0),
        assertions=_assertions_from(grading.get("componentResults") or []),
        metadata=metadata,
        location=SourceRef.model_validate(location) if isinstance(location, dict) else None,
        test_case=test_case,
        response_metadata=response.get("metadata") or {},
        fixed_output=bool(ours.get("fixedOutput")),
        reproducible_grading=bool(ours.get("reproducibleGrading")),
        not_run="budget" if ours.get("notRun") == "budget" else None,
        trace=_trace_of(item, traces or {}),
    )


def _trace_of(item: dict[str, Any], traces: dict[str, Any]) -> Trace | None:
    data = item.get("trace") if isinstance(item.get("trace"), dict) else traces.get(str(item.get("traceId")))
    if not isinstance(data, dict):
        return None
    try:
        return Trace.model_validate(data)
    except ValueError:
        return None


def _assertions_from(components: list[Any]) -> list[AssertionResult]:
    """Rebuild the nesting ci-grade recorded (depth); promptfoo's flat lists stay flat."""
    roots: list[AssertionResult] = []
    stack: list[tuple[int, AssertionResult]] = []
    for component in components:
        if not isinstance(component, dict):
            continue
        meta = dict(component.get("metadata") or {})
        ours = meta.pop("ciGrade", None) or {}
        assertion = component.get("assertion") or {}
        passed = bool(component.get("pass"))
        status = ours.get("status") or ("error" if meta.get("graderError") else "pass" if passed else "fail")
        result = AssertionResult(
            type=str(assertion.get("type") or "unknown"),
            value=assertion.get("value"),
            metric=assertion.get("metric"),
            weight=float(assertion.get("weight", 1.0) if assertion.get("weight") is not None else 1.0),
            threshold=assertion.get("threshold"),
            status=status,
            score=float(component.get("score") or 0.0),
            reason=str(component.get("reason") or ""),
            named_scores={str(k): float(v) for k, v in (component.get("namedScores") or {}).items() if isinstance(v, int | float)},
            grader=ours.get("grader"),
            token_usage=_read_usage(component.get("tokensUsed")),
            cost=float(ours.get("cost") or 0.0),
            metadata=meta,
        )
        depth = int(ours.get("depth") or 0)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            stack[-1][1].children.append(result)
        else:
            roots.append(result)
        stack.append((depth, result))
    return roots


def portable_provider(provider_id: str) -> str:
    """A provider id as promptfoo's results name it: `openai:chat:gpt-4o` is `openai:gpt-4o`."""
    return "openai:" + provider_id.removeprefix("openai:chat:") if provider_id.startswith("openai:chat:") else provider_id


def _derived_id(description: str | None, variables: dict[str, Any], prompt_label: str, provider: str) -> str:
    """An id for a row of promptfoo's file, which records none: tests sharing a description
    (array variables, scenarios) stay apart by their variables; repeats of one test share it."""
    identity = "v:" + json.dumps(variables, sort_keys=True, ensure_ascii=False, default=str)
    if description:
        identity = f"d:{description}\x1f{identity}"
    return hashlib.sha256("\x1f".join((identity, prompt_label, provider)).encode()).hexdigest()[:12]


def read_results(path: str) -> EvalRun:
    """A results JSON (ci-grade's or promptfoo's) as an EvalRun; exit 2 when unreadable."""
    return read_results_and_config(path)[0]


def read_results_and_config(path: str) -> tuple[EvalRun, dict[str, Any]]:
    """A results JSON as an EvalRun, and the config recorded in it ({} when none)."""
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"results file {path} does not exist")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None
    except RecursionError:
        raise ConfigError("not a results file: arrays or objects nested too deep", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read results: {exc}", file=path) from None
    data = data if isinstance(data, dict) else {}
    try:
        config = data.get("config")
        return from_promptfoo(data), config if isinstance(config, dict) else {}
    except (ValueError, TypeError, OverflowError, ValidationError) as exc:
        raise ConfigError(f"not a results file: {str(exc).splitlines()[0]}", file=path) from None
