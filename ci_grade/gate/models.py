"""What the gate decides from: its policy, and the comparison of a run with its baseline."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

from ci_grade.gate.baseline import Totals
from ci_grade.gate.history import RunPoint
from ci_grade.gate.statistics import wilson
from ci_grade.results.models import RunInfo, Status

FailOn = Literal["failures", "regressions", "never"]


Flip = Literal["newly failing", "newly passing"]


class GatePolicy(BaseModel):
    """What fails the gate. `max_errors` None means no errored row is tolerated."""

    fail_on: FailOn = "regressions"
    max_score_drop: float = 0.1
    """Per test: the largest tolerated drop of a reproducible test's score, or of a sampled test's pass rate."""
    max_metric_drop: float = 0.02
    """Suite level: the practical margin a significant drop of the mean score, pass rate or a metric must exceed."""
    min_pass_rate: float | None = None
    max_errors: int | None = None
    alpha: float = 0.05
    """The significance level of every one-sided test (Holm-corrected within each family)."""
    cluster_key: str | None = None
    """A `metadata` key grouping tests that are not independent (clustered standard errors)."""
    max_cost_increase: float | None = None
    """The largest tolerated rise of the cost per test over the baseline's (0.2: 20%); None: not judged."""

    @property
    def confidence(self) -> float:
        """The level of the two-sided intervals shown, 1 - 2 alpha (at least 1%): an interval lies
        wholly below zero exactly when the one-sided test at alpha finds a drop."""
        return max(0.01, 1.0 - 2.0 * self.alpha)


class AssertionDelta(BaseModel):
    """One assertion of a test, base vs head (matched by type, metric and occurrence)."""

    type: str
    metric: str | None = None
    base: float | None = None
    head: float | None = None
    base_passed: bool | None = None
    head_passed: bool | None = None
    reason: str = ""
    steps: list[str] = Field(default_factory=list)
    """A failing trajectory check's agent steps (`type:name args`), for reports."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base


class GateNote(BaseModel):
    """What the gate made of one test, for the JUnit file and annotations."""

    kind: Literal["regression", "known failure", "not significant"]
    text: str

    @property
    def gating(self) -> bool:
        return self.kind == "regression"


class Confirmation(BaseModel):
    """Fresh reruns of a newly failing sampled test (`--confirm N`)."""

    runs: int
    passes: int
    p_value: float
    """One-sided Fisher test of the reruns against the baseline's runs."""

    @property
    def verdict(self) -> Literal["confirmed", "flaky"]:
        """Confirmed when most reruns fail too; flaky when most pass."""
        return "confirmed" if self.passes * 2 < self.runs else "flaky"


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
    base_passes: int = 0
    head_passes: int = 0
    reproducible: bool = False
    """Its result cannot vary between runs: fixed or unchanged output, graded without a model."""
    flip: Flip | None = None
    p_value: float | None = None
    """One-sided exact test (Fisher) that the head passes less often, when there is evidence to judge."""
    significant: bool = False
    """Holm-significant across the tests judged."""
    evident: bool = False
    """Its change is not noise: it is reproducible, or its evidence is significant."""
    confirmation: Confirmation | None = None
    regressed: bool = False
    """Its score (a sampled test: its pass rate) dropped beyond tolerance, evidently."""
    inconclusive: bool = False
    """A drop or flip beyond tolerance that the evidence cannot tell from noise."""
    reason: str = ""
    error: str | None = None
    output: str = ""
    base_output: str | None = None
    """The baseline's output of the test (None when the baseline keeps none)."""
    location: str | None = None
    assertions: list[AssertionDelta] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        if self.base_score is None or self.head_score is None or "error" in (self.base_status, self.head_status):
            return None
        return self.head_score - self.base_score

    @property
    def new_failure(self) -> bool:
        return self.flip == "newly failing"

    @property
    def fixed(self) -> bool:
        return self.flip == "newly passing"

    @property
    def known_failure(self) -> bool:
        """Failing in the baseline too."""
        return self.base_status == "fail" and self.head_status == "fail"

    @property
    def base_interval(self) -> tuple[float, float] | None:
        """A 95% Wilson interval of the baseline's pass rate (None without scored runs)."""
        return wilson(self.base_passes, self.base_repeats) if self.base_repeats else None

    @property
    def head_interval(self) -> tuple[float, float] | None:
        return wilson(self.head_passes, self.head_repeats) if self.head_repeats else None

    def note(self) -> str:
        """A short note such as "score 0.90 -> 0.60 (-0.30)"."""
        parts = []
        if self.delta is not None:
            parts.append(f"score {self.base_score:.2f} -> {self.head_score:.2f} ({self.delta:+.2f})")
        if self.new_failure:
            parts.append("newly failing (passed in the baseline)")
        if self.p_value is not None:
            parts.append(f"pass rate {self.base_passes}/{self.base_repeats} -> {self.head_passes}/{self.head_repeats}, p={self.p_value:.3g}")
        return "; ".join(parts)


class MetricDelta(BaseModel):
    """A suite-level measure (mean score, pass rate, a named metric) over the tests paired in both runs,
    with the paired test that judged its change."""

    name: str
    base: float | None = None
    head: float | None = None
    tests: int = 0
    method: Literal["exact", "McNemar mid-p", "paired t"] | None = None
    """exact: every paired test is reproducible; McNemar mid-p: 0/1 outcomes, one run a side; paired t: otherwise."""
    p_value: float | None = None
    """One-sided p that the head is worse (before Holm's correction)."""
    p_adjusted: float | None = None
    significant: bool = False
    ci_low: float | None = None
    ci_high: float | None = None
    """A two-sided confidence interval of the delta at `GatePolicy.confidence` (1 - 2 alpha)."""
    mde: float | None = None
    """The smallest drop this comparison could detect (one-sided alpha, 80% power)."""
    tests_needed: int | None = None
    """Tests needed to tell the drop observed from noise (one-sided alpha, 80% power); None without a drop."""
    discordant: tuple[int, int] | None = None
    """McNemar's pass->fail and fail->pass counts."""
    clusters: int | None = None
    regressed: bool = False
    inconclusive: bool = False
    derived: bool = False
    """A `derivedMetrics` entry (computed from the named metrics' sums), not a named metric."""
    same_as: str | None = None
    """The measure this one is the same quantity as (same values per test): tested once, as that one."""

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
    verdict: Literal["passed", "regressed", "failed", "cancelled"]
    reason: str
    gate_failed: bool
    has_baseline: bool
    baseline_mismatch: str | None = None
    """Why a baseline that was given was set aside as another config's (too few tests shared):
    the gate then judged thresholds only, as without a baseline."""
    policy: GatePolicy = Field(default_factory=GatePolicy)
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    head_info: RunInfo = Field(default_factory=RunInfo)
    base_info: RunInfo | None = None
    base_measured: str | None = None
    """Set when the baseline was evaluated in this job (`--baseline run:REF`): which commit."""
    tests: list[CaseDelta] = Field(default_factory=list)
    mean_score: MetricDelta = Field(default_factory=lambda: MetricDelta(name="mean score"))
    pass_rate: MetricDelta = Field(default_factory=lambda: MetricDelta(name="pass rate"))
    same_measure: bool = False
    """Mean score and pass rate are one measure (every paired test's score is its pass rate): judged once."""
    metrics: list[MetricDelta] = Field(default_factory=list)
    pass_rate_head: Rate = Field(default_factory=Rate)
    pass_rate_base: Rate | None = None
    error_rows: int = 0
    head_totals: Totals = Field(default_factory=Totals)
    base_totals: Totals | None = None
    base_runs: int = 0
    """How many runs the baseline folds (0 without a baseline)."""
    history: list[RunPoint] = Field(default_factory=list, exclude=True)
    """The baseline's summaries of the base branch's last runs, oldest first (the report's trend)."""
    baseline_missing: str | None = None
    """Why the baseline asked for was not read (a mistyped path, a git ref not fetched): judged by thresholds only."""
    head_scores: list[float] = Field(default_factory=list, exclude=True)
    """The score of every scored test of the run, in order (`tests` may list only some tests)."""

    def _select(self, flag: str) -> list[CaseDelta]:
        return [t for t in self.tests if getattr(t, flag)]

    @property
    def regressions(self) -> list[CaseDelta]:
        """Per-test regressions (they fail the gate under `--fail-on regressions`): an evident drop
        beyond tolerance, or an evident new failure."""
        return [t for t in self.tests if t.regressed or (t.new_failure and t.evident)]

    @property
    def new_failures(self) -> list[CaseDelta]:
        return self._select("new_failure")

    @property
    def fixes(self) -> list[CaseDelta]:
        return self._select("fixed")

    @property
    def flaky_flips(self) -> list[CaseDelta]:
        """Newly failing sampled tests the evidence cannot tell from noise (listed, not gating)."""
        return [t for t in self.tests if t.new_failure and not t.evident]

    @property
    def known_failures(self) -> list[CaseDelta]:
        return self._select("known_failure")

    @property
    def measures(self) -> list[MetricDelta]:
        """The suite-level measures judged: the mean score, the pass rate and the metrics, each quantity once."""
        return [m for m in (self.mean_score, self.pass_rate, *self.metrics) if m.same_as is None]

    def label(self, m: MetricDelta) -> str:
        """How the report names a measure (and how `same_as` refers to it)."""
        if m is self.mean_score:
            return "pass rate" if self.same_measure else "mean score"
        return "pass rate" if m is self.pass_rate else f"metric {m.name!r}"

    def repeats(self, m: MetricDelta) -> list[MetricDelta]:
        """The measures with the same values as `m`, tested once with it."""
        label = self.label(m)
        return [r for r in (self.pass_rate, *self.metrics) if r.same_as == label and r is not m]

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

    def gate_notes(self) -> dict[str, GateNote]:
        """test_id -> what the gate made of a regressed or failing test, for JUnit and annotations."""
        notes = {t.test_id: GateNote(kind="regression", text=t.note()) for t in self.regressions}
        if self.has_baseline and self.policy.fail_on == "regressions":
            for t in self.known_failures:
                notes.setdefault(t.test_id, GateNote(kind="known failure", text="failing in the baseline too; does not fail the gate"))
            for t in self.flaky_flips:
                evidence = f", p={t.p_value:.2g}" if t.p_value is not None else ", no repeats to judge it by"
                notes.setdefault(t.test_id, GateNote(kind="not significant", text=f"newly failing, not significant (sampled{evidence}); does not fail the gate"))
        return notes
