"""Build typed results in memory for compare, baseline and report tests (no run needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ci_grade.results.models import AssertionResult, EvalRun, PromptInfo, ProviderInfo, RunInfo, TestResult


def row(
    name: str,
    score: float = 1.0,
    status: str | None = None,
    *,
    repeat: int = 0,
    metrics: dict[str, float] | None = None,
    assertions: list[AssertionResult] | None = None,
    fingerprint: str | None = None,
    test_id: str | None = None,
    reason: str = "",
    output: Any = "ok",
    error: str | None = None,
    provider: str = "bot",
    prompt: str = "prompt",
    sampled: bool = False,
) -> TestResult:
    """One row; the test id derives from `name`, the fingerprint from `fingerprint` or `name`.

    Rows are reproducible (a fixed output graded without a model) unless `sampled`."""
    status = status or ("pass" if score >= 0.5 else "fail")
    return TestResult(
        test_id=test_id or hashlib.sha256(name.encode()).hexdigest()[:12],
        fingerprint=hashlib.sha256((fingerprint or name).encode()).hexdigest()[:12],
        description=name,
        repeat_index=repeat,
        prompt=PromptInfo(raw="p", label=prompt, key=prompt),
        provider=ProviderInfo(id=provider),
        output=output,
        status=status,  # type: ignore[arg-type]
        score=score,
        named_scores=metrics or {},
        reason=reason or ("" if status == "pass" else f"{name} failed"),
        error=error,
        assertions=assertions or [AssertionResult(type="contains", status=status, score=score, reason=reason or "assertion reason")],  # type: ignore[arg-type]
        fixed_output=not sampled,
        reproducible_grading=not sampled,
    )


def run_of(*rows: TestResult, repeat: int = 1, **info: Any) -> EvalRun:
    results = list(rows)
    run = EvalRun(info=RunInfo(repeat=repeat, **info), results=results, stats=EvalRun.summarize(results))
    run.stats.duration_ms = 1500
    return run


def render(path: str | Path, run: EvalRun, config: Any = None, *, max_output_chars: int = 100_000) -> str:
    """The text an output format writes for `run` at `path` (no comparison), as one string."""
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import format_of

    return "".join(format_of(path).write(Document([Part("", run, None, config)], max_output_chars=max_output_chars)))
