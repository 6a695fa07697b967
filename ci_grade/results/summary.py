"""What the stages after a run need of each row without reading it whole: `RowSummary`.

A summary is small and kept in memory for every row (the rows themselves may be on disk, see
`spool.py`): identity, status, score, the numbers the run's statistics and promptfoo's
per-prompt metrics add up, the flattened assertions and a digest of the output the gate folds.
Text (reasons, outputs, vars) stays in the row. Strings are shared with the row, not copied.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ci_grade.results.models import Stats, Status, StoredRows, TestResult
from ci_grade.results.named_metrics import MetricPart, metric_parts
from ci_grade.results.usage import TokenUsage

Usage = tuple[int, int, int, int, int, int]
"""A `TokenUsage` as (prompt, completion, total, cached, reasoning, requests)."""


def output_hash(output: object) -> str:
    """A short digest of an output (text as it is, data as canonical JSON); never the output itself."""
    text = output if isinstance(output, str) else json.dumps(output, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _usage(usage: TokenUsage) -> Usage | None:
    values = (usage.prompt, usage.completion, usage.total, usage.cached, usage.reasoning, usage.num_requests)
    return values if any(values) else None


def add_usage(total: TokenUsage, usage: Usage | None) -> None:
    """Add a summary's usage into `total` (in place)."""
    if usage is not None:
        total.add(TokenUsage(prompt=usage[0], completion=usage[1], total=usage[2], cached=usage[3], reasoning=usage[4], num_requests=usage[5]))


@dataclass(slots=True)
class RowSummary:
    """One row's facts for the gate, the statistics and the per-prompt metrics."""

    test_id: str
    fingerprint: str
    description: str | None
    name: str
    prompt_key: str
    prompt_label: str
    prompt_template: str
    provider: str
    """The provider as shown (label, else id)."""
    column: int
    """promptfoo's prompt x provider column (`TestResult.column_index`)."""
    status: Status
    score: float
    repeat_index: int
    latency_ms: float
    cost: float | None
    grading_cost: float
    usage: Usage | None
    grading_usage: Usage | None
    named_scores: dict[str, float] | None
    metrics: tuple[MetricPart, ...] | None
    """The row's named metrics as the run totals add them (see `named_metrics.metric_parts`)."""
    assertions: tuple[str | float | bool | None, ...]
    """Flattened assertions as (type, metric, score, passed) repeated, in order."""
    output_digest: str
    output_chars: int
    """Characters of the output as results files hold it (text, or data as JSON)."""
    fixed_output: bool
    reproducible_grading: bool
    metadata: dict[str, object]
    cached: bool = False
    """The provider's reply came from the response cache."""
    not_run: str | None = None
    """Why the row was not (fully) run (`TestResult.not_run`)."""

    @classmethod
    def of(cls, row: TestResult, output_chars: int) -> RowSummary:
        flat: list[str | float | bool | None] = []
        for top in row.assertions:
            for item in top.flat():
                flat += (item.type, item.metric, item.score, item.status == "pass")
        return cls(
            test_id=row.test_id,
            fingerprint=row.fingerprint,
            description=row.description,
            name=row.name,
            prompt_key=row.prompt.key,
            prompt_label=row.prompt.label,
            prompt_template=row.prompt.template,
            provider=row.provider.display,
            column=row.prompt_index if row.column_index is None else row.column_index,
            status=row.status,
            score=row.score,
            repeat_index=row.repeat_index,
            latency_ms=row.latency_ms,
            cost=row.cost,
            grading_cost=row.grading_cost,
            usage=_usage(row.token_usage),
            grading_usage=_usage(row.grading_token_usage),
            named_scores=row.named_scores or None,
            metrics=metric_parts(row) or None,
            assertions=tuple(flat),
            output_digest=output_hash(row.output),
            output_chars=output_chars,
            fixed_output=row.fixed_output,
            reproducible_grading=row.reproducible_grading,
            metadata=row.metadata,
            cached=row.cached,
            not_run=row.not_run,
        )

    @property
    def total_cost(self) -> float:
        return (self.cost or 0.0) + self.grading_cost

    @property
    def reproducible(self) -> bool:
        return self.fixed_output and self.reproducible_grading

    def flat_assertions(self) -> Iterator[tuple[str, str | None, float, bool]]:
        """(type, metric, score, passed) of every flattened assertion, in order."""
        items = self.assertions
        for i in range(0, len(items), 4):
            metric = items[i + 1]
            yield str(items[i]), None if metric is None else str(metric), float(items[i + 2] or 0.0), bool(items[i + 3])


def summaries_of(rows: Sequence[TestResult]) -> Sequence[RowSummary]:
    """The rows' summaries: kept by stored rows, computed for rows in memory."""
    if isinstance(rows, StoredRows):
        stored: Sequence[RowSummary] = rows.summaries()
        return stored
    return [RowSummary.of(row, output_chars(row.output)) for row in rows]


def output_chars(output: object) -> int:
    """The length of an output as results files write it (0 for none)."""
    if output is None:
        return 0
    return len(output) if isinstance(output, str) else len(json.dumps(output, ensure_ascii=False, default=str))


def summarize(summaries: Iterable[RowSummary]) -> Stats:
    """The run's statistics, added up in plan order."""
    stats = Stats()
    for row in summaries:
        stats.count(row.status, row.cost, row.grading_cost)
        add_usage(stats.token_usage, row.usage)
        add_usage(stats.grading_token_usage, row.grading_usage)
    return stats
