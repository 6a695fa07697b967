"""What an assertion handler receives (`AssertionContext`) and returns (`Grade`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_grade.config.models import Assertion, ProviderSpec, TestCase
from ci_grade.errors import GraderError
from ci_grade.js_values import js_json
from ci_grade.providers.base import ProviderResponse
from ci_grade.results.traces import Trace
from ci_grade.results.usage import TokenUsage

if TYPE_CHECKING:
    from ci_grade.grading.graders import GraderResolver
    from ci_grade.results.models import AssertionResult


@dataclass
class Grade:
    """A handler's verdict. `error=True` means it could not decide (a grader error)."""

    passed: bool
    score: float
    reason: str = ""
    named_scores: dict[str, float] = field(default_factory=dict)
    token_usage: TokenUsage | None = None
    cost: float | None = None
    grader: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    error: bool = False
    children: list[AssertionResult] = field(default_factory=list)


@dataclass
class Measure:
    """What a prompt-based (graded) handler read from its grader: a 0..1 score and why.

    The engine turns it into a verdict with the prompt's pass rule, the threshold and `not-`.
    `reason` may hold `{relation}` and `{threshold}`, which the engine fills in (e.g.
    "Recall 0.80 is {relation} {threshold}" -> "Recall 0.80 is >= 0.5").
    """

    score: float
    reason: str = ""
    verdict: bool | None = None
    """The grader's own pass/fail, for prompts whose rule is `verdict`."""
    metadata: dict[str, Any] = field(default_factory=dict)
    named_scores: dict[str, float] = field(default_factory=dict)


@dataclass
class RunContext:
    """Run-wide services shared by every assertion."""

    env: Mapping[str, str]
    base_dir: Path
    graders: GraderResolver
    env_overrides: dict[str, str] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)
    """Built-in grader templates used in this run: name -> content hash."""


@dataclass
class AssertionContext:
    """One assertion about to be graded against one output."""

    assertion: Assertion
    value: Any
    output: Any
    vars: dict[str, Any]
    prompt: str
    prompt_label: str
    test: TestCase
    response: ProviderResponse
    run: RunContext
    provider: ProviderSpec | None = None
    provider_output: Any = None
    components: list[AssertionResult] = field(default_factory=list)
    """For comparison types: the row's other graded assertions (max-score aggregates them)."""
    default_threshold: float | None = None
    """The type's threshold when the config sets none (from the registry)."""
    trace: Trace | None = None
    """The row's spans, when the config enables tracing."""
    traceparent: str | None = None
    """A W3C trace context in the row's trace, for grader calls (None without tracing)."""

    def require_trace(self) -> Trace:
        """The row's trace; an ERROR (as in promptfoo) when tracing is not enabled."""
        if self.trace is None:
            raise GraderError(f"No trace data available for {self.base_type} assertion (enable tracing: in the config)")
        return self.trace

    @property
    def type(self) -> str:
        return self.assertion.type

    @property
    def base_type(self) -> str:
        return self.assertion.base_type

    @property
    def inverse(self) -> bool:
        return self.assertion.inverse

    @property
    def threshold(self) -> float | None:
        """The threshold the config sets (None when it sets none)."""
        return self.assertion.threshold

    @property
    def effective_threshold(self) -> float | None:
        """The configured threshold, else the type's default."""
        return self.default_threshold if self.assertion.threshold is None else self.assertion.threshold

    @property
    def rubric_prompt(self) -> Any:
        """The `rubricPrompt` that applies: the assertion's, else the test's (defaultTest merged in)."""
        for value in (self.assertion.rubricPrompt, self.test.options.rubricPrompt):
            if value not in (None, "", {}, []):
                return value
        return None

    @property
    def grader_ref(self) -> Any:
        """The grader this assertion names: its own `provider`, else the test's `options.provider`."""
        return self.assertion.provider if self.assertion.provider is not None else self.test.options.provider

    @property
    def config(self) -> dict[str, Any]:
        return self.assertion.config or {}

    @property
    def output_text(self) -> str:
        """The output as text: strings as they are, anything else as JSON."""
        return output_as_text(self.output)

    def check(self, ok: bool, expectation: str) -> Grade:
        """A binary result for `ok`, inverted by `not-`; `expectation` completes 'Expected output to ...'."""
        passed = ok != self.inverse
        if passed:
            return Grade(True, 1.0, "Assertion passed")
        return Grade(False, 0.0, f"Expected output to {'not ' if self.inverse else ''}{expectation}")

    def verdict(self, ok: bool, reason: str, expectation: str) -> Grade:
        """Like `check`, but a failure of the positive form gives `reason` (why the check failed)."""
        if ok != self.inverse:
            return Grade(True, 1.0, "Assertion passed")
        if self.inverse:
            return Grade(False, 0.0, f"Expected output to not {expectation}")
        return Grade(False, 0.0, reason)


def output_as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if output is None:
        return ""
    return js_json(output)
