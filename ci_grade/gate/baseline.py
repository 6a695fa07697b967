"""The baseline: per stable test id, what a known-good run scored, and where it came from.

A baseline keeps names, scores and pass/fail per test and assertion, a hash of the output (to
tell a reproducible result), the output itself cut to `OUTPUT_CHARS` characters (so a report can
show a regression's output before and after; secrets are masked when it is saved), no vars or
assertion values, plus the run's provenance (commit, config hash, graders and their template
hashes) and the summaries of the base branch's last runs (`history.py`). Baselines written
before outputs were kept read as ever (no output to show). `ci_grade.gate.store` reads and writes it.

Repeats (`--repeat N`, or several runs saved together) are folded per test: the score is the
mean of the scored repeats, the spread their sample standard deviation (0 with a single repeat),
the pass count is kept, and a test passes when more than half of its scored repeats pass.
Errored repeats are counted, never scored.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from pydantic import BaseModel, Field

from ci_grade.gate import derived
from ci_grade.gate.history import RunPoint
from ci_grade.results.models import EvalRun, RunInfo, Status, TestResult
from ci_grade.results.summary import RowSummary, output_hash, output_text, summaries_of

__all__ = ["Baseline", "BaselineAssertion", "BaselineTest", "ProviderTotals", "Totals", "baseline_from_run", "baseline_from_runs", "fold_test", "group_rows", "output_hash"]

BASELINE_VERSION = 1
OUTPUT_CHARS = 2_000
"""Characters of each test's output a baseline keeps (a longer one is cut, ending in "…")."""


class BaselineAssertion(BaseModel):
    """One assertion of a test (flattened, in config order), folded over repeats."""

    type: str
    metric: str | None = None
    score: float = 0.0
    passed: bool = False

    @property
    def key(self) -> str:
        return f"{self.type}\x1f{self.metric or ''}"


class BaselineTest(BaseModel):
    """One test x prompt x provider, folded over its repeats."""

    test_id: str
    fingerprint: str = ""
    description: str | None = None
    name: str = ""
    prompt_label: str = ""
    provider: str = ""
    score: float = 0.0
    score_spread: float = 0.0
    repeats: int = 1
    errors: int = 0
    passes: int = 0
    passed: bool = False
    status: Status = "fail"
    assertions: list[BaselineAssertion] = Field(default_factory=list)
    named_scores: dict[str, float] = Field(default_factory=dict)
    named_spreads: dict[str, float] = Field(default_factory=dict)
    reply_digest: str | None = None
    """A digest of the reply when every scored repeat produced the same one (never the reply itself)."""
    fixed_reply: bool = False
    """Every repeat's reply was fixed (a recorded `providerOutput` or the `echo` provider)."""
    reproducible_grading: bool = False
    """Every repeat was graded without a model (the same output always gets the same verdict)."""
    named_weights: dict[str, float] = Field(default_factory=dict)
    """The weight behind each named score (mean over repeats), so a run's metric counts per assertion."""
    output: str | None = None
    """The reply of the newest run's first scored repeat (else its first), cut to `OUTPUT_CHARS`."""

    @property
    def scored(self) -> int:
        """Repeats that produced a score (not errors)."""
        return self.repeats - self.errors

    @property
    def pass_rate(self) -> float | None:
        """The share of scored repeats that passed (None when none was scored)."""
        return self.passes / self.scored if self.scored else None


class ProviderTotals(BaseModel):
    """One provider's calls in a run (rows whose reply was not served from the cache)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None


class Totals(BaseModel):
    """Accounting for a whole run.

    `priced_rows` and `priced_cost` count the rows that were graded (not errors) with a reply not
    served from the cache, and what they cost (provider and graders): their mean is the cost per
    test the gate compares (`--max-cost-increase`), unmoved by cache hits, errors or the number of tests.
    """

    rows: int = 0
    tokens: int = 0
    grading_tokens: int = 0
    cost: float = 0.0
    duration_ms: float = 0.0
    priced_rows: int = 0
    priced_cost: float = 0.0
    not_run: int = 0
    """Rows not (fully) run because the run's budget (`--max-cost`) was reached."""
    providers: dict[str, ProviderTotals] = Field(default_factory=dict)

    @property
    def cost_per_test(self) -> float | None:
        return self.priced_cost / self.priced_rows if self.priced_rows else None

    @classmethod
    def of(cls, run: EvalRun) -> Totals:
        stats = run.stats
        totals = cls(
            rows=len(run.results),
            tokens=stats.token_usage.total,
            grading_tokens=stats.grading_token_usage.total,
            cost=stats.cost + stats.grading_cost,
            duration_ms=stats.duration_ms,
        )
        latencies: dict[str, list[float]] = defaultdict(list)
        for row in summaries_of(run.results):
            totals.not_run += row.not_run is not None
            if row.cached or row.status == "error":
                continue
            totals.priced_rows += 1
            totals.priced_cost += row.total_cost
            provider = totals.providers.setdefault(row.provider, ProviderTotals())
            provider.calls += 1
            provider.prompt_tokens += row.usage[0] if row.usage else 0
            provider.completion_tokens += row.usage[1] if row.usage else 0
            provider.cost += row.cost or 0.0
            if row.latency_ms > 0:
                latencies[row.provider].append(row.latency_ms)
        for name, values in latencies.items():
            totals.providers[name].latency_p50_ms, totals.providers[name].latency_p95_ms = percentile(values, 50), percentile(values, 95)
        return totals


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile, interpolated between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class Baseline(BaseModel):
    version: int = BASELINE_VERSION
    info: RunInfo = Field(default_factory=RunInfo)
    totals: Totals = Field(default_factory=Totals)
    runs: int = 1
    """How many runs were folded into it (several runs of main tell the baseline's own noise)."""
    tests: dict[str, BaselineTest] = Field(default_factory=dict)
    derived: dict[str, float] = Field(default_factory=dict)
    """The run's `derivedMetrics` over its scored tests (the definitions are in `info`); the gate
    recomputes them over the tests both runs scored and shows these when the run defines none."""
    measured: str | None = Field(default=None, exclude=True)
    """For a base evaluated in this job (`--baseline run:REF`): which commit, e.g. "the merge base
    1a2b3c4d5e6f of origin/main"; never stored."""
    history: list[RunPoint] = Field(default_factory=list)
    """The base branch's last runs, oldest first (`history.py`); empty in older baselines."""


def _mean_and_spread(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance)


def _fold_assertions(rows: Sequence[RowSummary]) -> list[BaselineAssertion]:
    """Flattened assertions matched across repeats by (type, metric, occurrence)."""
    scores: dict[tuple[str, str | None, int], list[float]] = defaultdict(list)
    passes: dict[tuple[str, str | None, int], list[bool]] = defaultdict(list)
    order: list[tuple[str, str | None, int]] = []
    for row in rows:
        seen: dict[tuple[str, str | None], int] = defaultdict(int)
        for kind, metric, score, passed in row.flat_assertions():
            occurrence = seen[(kind, metric)]
            seen[(kind, metric)] += 1
            key = (kind, metric, occurrence)
            if key not in scores:
                order.append(key)
            scores[key].append(score)
            passes[key].append(passed)
    return [
        BaselineAssertion(type=key[0], metric=key[1], score=_mean_and_spread(scores[key])[0], passed=sum(passes[key]) * 2 > len(passes[key]))
        for key in order
    ]


def fold_test(rows: Sequence[RowSummary]) -> BaselineTest:
    """The repeats of one test (same test id) as one baseline entry."""
    first = rows[0]
    scored = [r for r in rows if r.status != "error"]
    score, spread = _mean_and_spread([r.score for r in scored])
    named: dict[str, list[float]] = defaultdict(list)
    weights: dict[str, list[float]] = defaultdict(list)
    for row in scored:
        for metric, value in (row.named_scores or {}).items():
            named[metric].append(value)
        for metric, _, weight, _ in row.metrics or ():
            weights[metric].append(weight)
    folded = {metric: _mean_and_spread(values) for metric, values in named.items()}
    passes = sum(r.status == "pass" for r in scored)
    passed = bool(scored) and passes * 2 > len(scored)
    hashes = {r.output_digest for r in scored}
    return BaselineTest(
        test_id=first.test_id,
        fingerprint=first.fingerprint,
        description=first.description,
        name=first.name,
        prompt_label=first.prompt_label,
        provider=first.provider,
        score=score,
        score_spread=spread,
        repeats=len(rows),
        errors=len(rows) - len(scored),
        passes=passes,
        passed=passed,
        status="error" if not scored else "pass" if passed else "fail",
        assertions=_fold_assertions(scored),
        named_scores={m: v[0] for m, v in folded.items()},
        named_spreads={m: v[1] for m, v in folded.items()},
        reply_digest=hashes.pop() if len(hashes) == 1 else None,
        fixed_reply=all(r.fixed_output for r in rows),
        reproducible_grading=all(r.reproducible_grading for r in rows),
        named_weights={m: math.fsum(w) / len(w) for m, w in weights.items()},
    )


class _HasTestId(Protocol):
    @property
    def test_id(self) -> str: ...


_Row = TypeVar("_Row", bound=_HasTestId)


def group_rows(results: Iterable[_Row]) -> dict[str, list[_Row]]:
    """Rows (or their summaries) grouped by test id, in first-seen order."""
    groups: dict[str, list[_Row]] = {}
    for row in results:
        groups.setdefault(row.test_id, []).append(row)
    return groups


def baseline_from_run(run: EvalRun) -> Baseline:
    return baseline_from_runs([run])


def baseline_from_runs(runs: list[EvalRun]) -> Baseline:
    """Several runs of one config (e.g. the last few runs of main) folded as repeats of each test;
    provenance and totals are the newest run's."""
    newest = runs[-1]
    tests = {test_id: fold_test(rows) for test_id, rows in group_rows(row for run in runs for row in summaries_of(run.results)).items()}
    scored = [derived.sums(t.named_scores, t.named_weights) for t in tests.values() if t.status != "error"]
    values = derived.values(scored, newest.info.derived_metrics) if scored else {}
    for test_id, position in _shown_rows(summaries_of(newest.results)).items():
        tests[test_id].output = _kept_output(newest.results[position])
    history = [run_point(run, Totals.of(run).cost) for run in runs]
    return Baseline(
        info=newest.info.model_copy(deep=True),
        totals=Totals.of(newest),
        runs=len(runs),
        tests=tests,
        derived={name: value for name, value in values.items() if math.isfinite(value)},
        history=history,
    )


def _shown_rows(rows: Sequence[RowSummary]) -> dict[str, int]:
    """Per test, the position of its first scored row (else its first row)."""
    shown: dict[str, int] = {}
    for position, row in enumerate(rows):
        first = shown.get(row.test_id)
        if first is None or (rows[first].status == "error" and row.status != "error"):
            shown[row.test_id] = position
    return shown


def _kept_output(row: TestResult) -> str | None:
    """A row's output as a baseline keeps it: text (data as JSON), cut to `OUTPUT_CHARS`."""
    if row.output is None:
        return None
    text = output_text(row.output)
    return text if len(text) <= OUTPUT_CHARS else text[: OUTPUT_CHARS - 1] + "…"


def run_point(run: EvalRun, cost: float) -> RunPoint:
    """The summary of one run (`history`), from its tests folded over repeats; `cost` is what it spent."""
    listed = [fold_test(rows) for rows in group_rows(summaries_of(run.results)).values()]
    info = run.info
    scored = [t for t in listed if t.status != "error"]
    metrics: dict[str, tuple[float, float]] = {}
    for test in scored:
        for name, value in test.named_scores.items():
            weight = test.named_weights.get(name, 1.0)
            total, weights = metrics.get(name, (0.0, 0.0))
            metrics[name] = (total + value * weight, weights + weight)
    return RunPoint(
        created_at=info.created_at,
        commit=info.commit,
        tests=len(listed),
        passed=sum(t.status == "pass" for t in listed),
        mean_score=math.fsum(t.score for t in scored) / len(scored) if scored else None,
        metrics={name: total / weights for name, (total, weights) in sorted(metrics.items()) if weights},
        cost=cost,
    )
