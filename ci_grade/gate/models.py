"""What the gate decides from: its policy, and the comparison of a run with its baseline."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

from ci_grade.gate.baseline import Totals
from ci_grade.results.models import RunInfo, Status

FailOn = Literal["failures", "regressions", "never"]


class GatePolicy(BaseModel):
    """What fails the gate. `max_errors` None means no errored row is tolerated."""

    fail_on: FailOn = "regressions"
    max_score_drop: float = 0.1
    max_metric_drop: float = 0.02
    min_pass_rate: float | None = None
    max_errors: int | None = None


class AssertionDelta(BaseModel):
    """One assertion of a test, base vs head (matched by type, metric and occurrence)."""

    type: str
    metric: str | None = None
    base: float | None = None
    head: float | None = None
    base_passed: bool | None = None
    head_passed: bool | None = None
    reason: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base


class CaseDelta(BaseModel):
    """One test x prompt x provider: what the baseline and the run say, and the judgement."""

    test_id: str
    base_id: str | None = None
    change: Literal["same", "renamed", "added", "removed"] = "same"
    name: str = ""
    base_name: str | None = None
    prompt_label: str = ""
    provider: str = ""
    base_status: Status | None = None
    head_status: Status | None = None
    base_score: float | None = None
    head_score: float | None = None
    base_spread: float = 0.0
    head_spread: float = 0.0
    base_repeats: int = 0
    head_repeats: int = 0
    head_errors: int = 0
    noise: float = 0.0
    regressed: bool = False
    inconclusive: bool = False
    new_failure: bool = False
    fixed: bool = False
    reason: str = ""
    error: str | None = None
    output: str = ""
    location: str | None = None
    assertions: list[AssertionDelta] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        if self.base_score is None or self.head_score is None or "error" in (self.base_status, self.head_status):
            return None
        return self.head_score - self.base_score

    def note(self) -> str:
        """A short note such as "score 0.90 -> 0.60 (-0.30)"."""
        parts = []
        if self.delta is not None:
            parts.append(f"score {self.base_score:.2f} -> {self.head_score:.2f} ({self.delta:+.2f})")
        if self.new_failure:
            parts.append("newly failing (passed in the baseline)")
        return "; ".join(parts)


class MetricDelta(BaseModel):
    """A named metric (or the mean score) over the tests matched in both runs."""

    name: str
    base: float | None = None
    head: float | None = None
    tests: int = 0
    noise: float = 0.0
    regressed: bool = False
    inconclusive: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base


class Rate(BaseModel):
    passed: int = 0
    total: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def value(self) -> float:
        return self.passed / self.total if self.total else 0.0


class Comparison(BaseModel):
    verdict: Literal["passed", "regressed", "failed"]
    reason: str
    gate_failed: bool
    has_baseline: bool
    policy: GatePolicy = Field(default_factory=GatePolicy)
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    head_info: RunInfo = Field(default_factory=RunInfo)
    base_info: RunInfo | None = None
    tests: list[CaseDelta] = Field(default_factory=list)
    mean_score: MetricDelta = Field(default_factory=lambda: MetricDelta(name="mean score"))
    metrics: list[MetricDelta] = Field(default_factory=list)
    pass_rate_head: Rate = Field(default_factory=Rate)
    pass_rate_base: Rate | None = None
    error_rows: int = 0
    head_totals: Totals = Field(default_factory=Totals)
    base_totals: Totals | None = None

    def _select(self, flag: str) -> list[CaseDelta]:
        return [t for t in self.tests if getattr(t, flag)]

    @property
    def regressions(self) -> list[CaseDelta]:
        """Tests whose score dropped beyond tolerance and noise, or that newly fail."""
        return [t for t in self.tests if t.regressed or t.new_failure]

    @property
    def new_failures(self) -> list[CaseDelta]:
        return self._select("new_failure")

    @property
    def fixes(self) -> list[CaseDelta]:
        return self._select("fixed")

    @property
    def inconclusive(self) -> list[CaseDelta]:
        return self._select("inconclusive")

    @property
    def failures(self) -> list[CaseDelta]:
        """Every test failing now (including new failures)."""
        return [t for t in self.tests if t.head_status == "fail"]

    @property
    def errors(self) -> list[CaseDelta]:
        """Tests with at least one errored row."""
        return [t for t in self.tests if t.head_errors]

    def changed(self, kind: Literal["renamed", "added", "removed"]) -> list[CaseDelta]:
        return [t for t in self.tests if t.change == kind]

    def regression_notes(self) -> dict[str, str]:
        """test_id -> short note, for JUnit failure messages."""
        return {t.test_id: t.note() for t in self.regressions}
