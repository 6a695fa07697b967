"""The typed results of a run: the contract every stage after grading works from.

Compare, reports and GitHub publishing read only these models, so they also work on a results
file written on another machine (or by promptfoo itself; see `promptfoo.py`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WrapValidator

from ci_grade.results.traces import Trace
from ci_grade.results.usage import TokenUsage

Status = Literal["pass", "fail", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class AssertionResult(_Model):
    """One graded assertion: pass, fail or error, with score, reason and grader accounting."""

    type: str
    value: Any = None
    metric: str | None = None
    weight: float = 1.0
    threshold: float | None = None
    status: Status
    score: float = 0.0
    reason: str = ""
    named_scores: dict[str, float] = Field(default_factory=dict)
    grader: str | None = None
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)
    children: list[AssertionResult] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def flat(self) -> list[AssertionResult]:
        """This result followed by its children (promptfoo's flattened componentResults)."""
        out = [self]
        for child in self.children:
            out.extend(child.flat())
        return out


class PromptInfo(_Model):
    raw: str
    label: str
    key: str
    template: str = ""


class ProviderInfo(_Model):
    id: str
    label: str | None = None

    @property
    def display(self) -> str:
        return self.label or self.id


class SourceRef(_Model):
    file: str
    line: int | None = None


class TestResult(_Model):
    """One row: a test x prompt x provider (x repeat), run and graded."""

    test_id: str
    fingerprint: str = ""
    description: str | None = None
    test_index: int = 0
    prompt_index: int = 0
    provider_index: int = 0
    column_index: int | None = None
    """promptfoo's `promptIdx`: the prompt x provider column (None in rows read from older files)."""
    repeat_index: int = 0
    vars: dict[str, Any] = Field(default_factory=dict)
    prompt: PromptInfo
    provider: ProviderInfo
    output: Any = None
    status: Status
    score: float = 0.0
    named_scores: dict[str, float] = Field(default_factory=dict)
    named_score_weights: dict[str, float] = Field(default_factory=dict)
    """Per named metric, the sum of the weights behind its value (see `named_metrics`)."""
    reason: str = ""
    error: str | None = None
    latency_ms: float = 0.0
    cached: bool = False
    finish_reason: str | None = None
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    grading_token_usage: TokenUsage = Field(default_factory=TokenUsage)
    grading_cost: float = 0.0
    assertions: list[AssertionResult] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    location: SourceRef | None = None
    test_case: dict[str, Any] = Field(default_factory=dict)
    response_metadata: dict[str, Any] = Field(default_factory=dict)
    not_run: Literal["budget"] | None = None
    """Why an ERROR row was not (fully) run: "budget" when the run's spending limit refused a call."""
    fixed_output: bool = False
    """The output cannot vary between runs (a recorded `providerOutput`, or the `echo` provider)."""
    reproducible_grading: bool = False
    """The same output always gets the same verdict (no model grader, webhook or latency check)."""
    trace: Trace | None = None
    """The spans exported for this row's trace context, when the config enables `tracing`."""

    @property
    def reproducible(self) -> bool:
        """Both: this row's result cannot change between runs of the same config."""
        return self.fixed_output and self.reproducible_grading

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def name(self) -> str:
        """A human name for the test: its description, else its vars."""
        if self.description:
            return self.description
        if self.vars:
            shown = ", ".join(f"{k}={_short(v)}" for k, v in self.vars.items() if not str(k).startswith("_"))
            return shown or self.test_id
        return self.test_id

    def failed_assertions(self) -> list[AssertionResult]:
        return [a for result in self.assertions for a in result.flat() if a.status != "pass" and a.weight != 0]

    @property
    def total_cost(self) -> float:
        return (self.cost or 0.0) + self.grading_cost


class Stats(_Model):
    successes: int = 0
    failures: int = 0
    errors: int = 0
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    grading_token_usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float = 0.0
    grading_cost: float = 0.0
    duration_ms: float = 0.0

    @property
    def total(self) -> int:
        return self.successes + self.failures + self.errors

    @property
    def pass_rate(self) -> float:
        return self.successes / self.total if self.total else 0.0

    def count(self, status: Status, cost: float | None, grading_cost: float) -> None:
        """Count one row by its status and add its costs (its token usage is added by the caller)."""
        if status == "pass":
            self.successes += 1
        elif status == "fail":
            self.failures += 1
        else:
            self.errors += 1
        self.cost += cost or 0.0
        self.grading_cost += grading_cost


class ShardInfo(_Model):
    """The part of a plan a results file holds (`eval --shard K/N`), and the whole plan's size."""

    index: int
    count: int
    groups: int
    rows: int


class RunInfo(_Model):
    """Provenance: what produced these results (stored in baselines too).

    `plan_hash` fingerprints the whole plan (the config, filters, repeats and every test's
    variables), the same on any machine and for every shard of one plan; `config_name` is the
    config file(s) relative to the repository, the section name when configs are merged.
    """

    ci_grade_version: str = ""
    created_at: str = ""
    description: str | None = None
    config_files: list[str] = Field(default_factory=list)
    config_hash: str = ""
    config_name: str = ""
    plan_hash: str = ""
    shard: ShardInfo | None = None
    commit: str | None = None
    graders: list[str] = Field(default_factory=list)
    grader_templates: dict[str, str] = Field(default_factory=dict)
    repeat: int = 1
    source: Literal["ci-grade", "promptfoo"] = "ci-grade"
    derived_metrics: list[dict[str, str]] = Field(default_factory=list)
    """The config's `derivedMetrics` ({name, value}), computed per prompt column from the named scores."""


class StoredRows(Sequence[TestResult]):
    """Rows kept outside memory (`spool.RowSpool`): in plan order, sized, readable any number of
    times, each row read when it is asked for; their summaries stay in memory."""

    @abstractmethod
    def summaries(self) -> Sequence[Any]:
        """One `summary.RowSummary` per row, in plan order."""


def _rows(value: Any, handler: Callable[[Any], Any]) -> Any:
    """Stored rows are taken as they are; anything else is validated as a list of rows."""
    return value if isinstance(value, StoredRows) else handler(value)


Rows = Annotated[Sequence[TestResult], WrapValidator(_rows)]
"""A run's rows: a list in memory, or `StoredRows`."""


class EvalRun(_Model):
    """Everything one `ci-grade eval` produced."""

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)

    info: RunInfo = Field(default_factory=RunInfo)
    results: Rows = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)
    warnings: list[str] = Field(default_factory=list)
    confirmations: list[TestResult] = Field(default_factory=list)
    """Fresh reruns of newly failing sampled tests (`--confirm N`): evidence for those tests only,
    kept out of `results` and the run's statistics."""

    @classmethod
    def summarize(cls, results: Sequence[TestResult]) -> Stats:
        stats = Stats()
        for row in results:
            stats.count(row.status, row.cost, row.grading_cost)
            stats.token_usage.add(row.token_usage)
            stats.grading_token_usage.add(row.grading_token_usage)
        return stats


def _short(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
