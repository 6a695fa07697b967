"""The terminal: a one-screen summary at the end of a run (progress while it runs: `progress.py`)."""

from __future__ import annotations

from ci_grade import redact
from ci_grade.report.wording import plural
from ci_grade.results.models import EvalRun, TestResult
from ci_grade.results.summary import summaries_of
from ci_grade.safe_text import terminal

_MAX_LISTED = 8


def format_cost(cost: float) -> str:
    if cost == 0:
        return "$0"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


def format_duration(ms: float) -> str:
    seconds = ms / 1000
    return f"{seconds:.1f}s" if seconds < 120 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _one_line(text: str, limit: int = 160) -> str:
    """`text` masked, on one line, then cut to `limit` characters."""
    text = " ".join(redact.text(str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(row: TestResult) -> str:
    if not row.location:
        return ""
    return f" ({row.location.file}" + (f":{row.location.line})" if row.location.line else ")")


def summary(run: EvalRun) -> str:
    """Passed / failed / errors, tokens, cost and duration, then the first failures and errors."""
    stats = run.stats
    lines = []
    title = f"ci-grade: {run.info.description}" if run.info.description else "ci-grade"
    lines.append(title)
    lines.append(
        f"  {stats.successes} passed, {stats.failures} failed, {plural(stats.errors, 'error')}"
        f"  ({plural(stats.total, 'row')}, pass rate {stats.pass_rate:.1%})"
    )
    grading = stats.grading_token_usage.total
    tokens = stats.token_usage.total + grading
    lines.append(
        f"  tokens {tokens:,} (provider {stats.token_usage.total:,}, grading {grading:,})"
        f"  cost {format_cost(stats.cost + stats.grading_cost)}  duration {format_duration(stats.duration_ms)}"
    )
    if run.info.graders:
        lines.append(f"  graders: {', '.join(run.info.graders)}")
    summaries = summaries_of(run.results)
    several_prompts = len({r.prompt_key for r in summaries}) > 1
    for status, heading in (("fail", "Failed"), ("error", "Errors")):
        positions = [position for position, r in enumerate(summaries) if r.status == status]
        if not positions:
            continue
        lines.append(f"{heading}:")
        for row in (run.results[position] for position in positions[:_MAX_LISTED]):
            reason = row.error if status == "error" else row.reason
            target = f"{row.provider.display} | {_one_line(row.prompt.label, 30)}" if several_prompts else row.provider.display
            repeat = f" (repeat {row.repeat_index + 1})" if row.repeat_index else ""
            lines.append(f"  - [{target}] {_one_line(row.name, 60)}{repeat}{_where(row)}: {_one_line(reason or '')}")
        if len(positions) > _MAX_LISTED:
            lines.append(f"  ... and {plural(len(positions) - _MAX_LISTED, 'more failing row' if status == 'fail' else 'more errored row')} (see the results file)")
    return terminal(redact.text("\n".join(lines)))
