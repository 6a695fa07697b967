"""The baseline store: per stable test id, what a known-good run scored, and where it came from.

A baseline keeps no outputs, vars or assertion values: only names, scores and pass/fail per
test and assertion, plus the run's provenance (commit, config hash, graders and their template
hashes). It can be read from a baseline file, from any results JSON (ci-grade's or promptfoo's
own), or from git (`git:REF:PATH`, e.g. the base branch's committed baseline).

Repeats (`--repeat N`) are folded per test: the score is the mean of the scored repeats, the
spread their sample standard deviation (0 with a single repeat), and a test passes when more
than half of its scored repeats pass. Errored repeats are counted, never scored.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ci_grade.errors import ConfigError, InfrastructureError, UsageError
from ci_grade.redact import Redactor
from ci_grade.results.models import EvalRun, RunInfo, Status, TestResult

BASELINE_VERSION = 1
GIT_PREFIX = "git:"


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

    @property
    def scored(self) -> int:
        """Repeats that produced a score (not errors)."""
        return self.repeats - self.errors


class Totals(BaseModel):
    """Accounting for a whole run."""

    rows: int = 0
    tokens: int = 0
    grading_tokens: int = 0
    cost: float = 0.0
    duration_ms: float = 0.0

    @classmethod
    def of(cls, run: EvalRun) -> Totals:
        stats = run.stats
        return cls(
            rows=len(run.results),
            tokens=stats.token_usage.total,
            grading_tokens=stats.grading_token_usage.total,
            cost=stats.cost + stats.grading_cost,
            duration_ms=stats.duration_ms,
        )


class Baseline(BaseModel):
    version: int = BASELINE_VERSION
    info: RunInfo = Field(default_factory=RunInfo)
    totals: Totals = Field(default_factory=Totals)
    tests: dict[str, BaselineTest] = Field(default_factory=dict)


def _mean_and_spread(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance)


def _fold_assertions(rows: list[TestResult]) -> list[BaselineAssertion]:
    """Flattened assertions matched across repeats by (type, metric, occurrence)."""
    scores: dict[tuple[str, str | None, int], list[float]] = defaultdict(list)
    passes: dict[tuple[str, str | None, int], list[bool]] = defaultdict(list)
    order: list[tuple[str, str | None, int]] = []
    for row in rows:
        seen: dict[tuple[str, str | None], int] = defaultdict(int)
        for top in row.assertions:
            for item in top.flat():
                occurrence = seen[(item.type, item.metric)]
                seen[(item.type, item.metric)] += 1
                key = (item.type, item.metric, occurrence)
                if key not in scores:
                    order.append(key)
                scores[key].append(item.score)
                passes[key].append(item.status == "pass")
    return [
        BaselineAssertion(type=key[0], metric=key[1], score=_mean_and_spread(scores[key])[0], passed=sum(passes[key]) * 2 > len(passes[key]))
        for key in order
    ]


def fold_test(rows: list[TestResult]) -> BaselineTest:
    """The repeats of one test (same test id) as one baseline entry."""
    first = rows[0]
    scored = [r for r in rows if r.status != "error"]
    score, spread = _mean_and_spread([r.score for r in scored])
    named: dict[str, list[float]] = defaultdict(list)
    for row in scored:
        for metric, value in row.named_scores.items():
            named[metric].append(value)
    folded = {metric: _mean_and_spread(values) for metric, values in named.items()}
    passes = sum(r.status == "pass" for r in scored)
    passed = bool(scored) and passes * 2 > len(scored)
    return BaselineTest(
        test_id=first.test_id,
        fingerprint=first.fingerprint,
        description=first.description,
        name=first.name,
        prompt_label=first.prompt.label,
        provider=first.provider.display,
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
    )


def group_rows(results: Iterable[TestResult]) -> dict[str, list[TestResult]]:
    """Rows grouped by test id, in first-seen order."""
    groups: dict[str, list[TestResult]] = {}
    for row in results:
        groups.setdefault(row.test_id, []).append(row)
    return groups


def baseline_from_run(run: EvalRun) -> Baseline:
    return Baseline(
        info=run.info.model_copy(deep=True),
        totals=Totals.of(run),
        tests={test_id: fold_test(rows) for test_id, rows in group_rows(run.results).items()},
    )


def save_baseline(baseline: Baseline, path: Path, *, redactor: Redactor | None = None) -> None:
    """Write atomically; secret values (known to `redactor`, else from the environment) are
    masked and config paths under the working directory made relative."""
    from ci_grade.report.outputs import write_atomic

    portable = baseline.model_copy(deep=True)
    portable.info.config_files = [_relative(name) for name in portable.info.config_files]
    data = (redactor or Redactor.from_env()).data(portable.model_dump(mode="json"))
    write_atomic(Path(path), json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _relative(name: str) -> str:
    """A config path relative to the working directory when under it (a committed baseline
    should not carry one machine's absolute paths)."""
    path = Path(name)
    try:
        return path.relative_to(Path.cwd()).as_posix() if path.is_absolute() else name
    except ValueError:
        return name


def load_baseline(source: str, cwd: Path) -> Baseline | None:
    """A baseline from a file, a results JSON or `git:REF:PATH`; None when it does not exist."""
    if source.startswith(GIT_PREFIX):
        text = _git_file(source, cwd)
        if text is None:
            return None
        return parse_baseline(text, source)
    path = Path(source).expanduser()
    path = path if path.is_absolute() else Path(cwd) / path
    if not path.exists():
        return None
    if path.is_dir():
        raise UsageError(f"baseline {source} is a directory, expected a baseline or results JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read baseline: {exc}", file=source) from None
    return parse_baseline(text, source)


def parse_baseline(text: str, source: str) -> Baseline:
    """A baseline file's text, or a results JSON's (converted), as a Baseline."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=source, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object (a ci-grade baseline or a results file)", file=source)
    if "tests" in data and "version" in data:
        return _baseline_from_data(data, source)
    if isinstance(data.get("results"), dict):
        from ci_grade.results.promptfoo import from_promptfoo

        try:
            return baseline_from_run(from_promptfoo(data))
        except (ValueError, TypeError, ValidationError) as exc:
            raise ConfigError(f"unreadable results file: {_first_line(exc)}", file=source) from None
    raise ConfigError("neither a ci-grade baseline (version, tests) nor a results file (results.results[])", file=source)


def _baseline_from_data(data: dict[str, Any], source: str) -> Baseline:
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise ConfigError(f"invalid baseline version {version!r}", file=source, path="version")
    if version > BASELINE_VERSION:
        raise ConfigError(f"baseline version {version} was written by a newer ci-grade (this one reads version {BASELINE_VERSION})", file=source, path="version")
    try:
        return Baseline.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ConfigError(f"invalid baseline: {error['msg']}", file=source, path=where) from None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise InfrastructureError("cannot read a git: baseline: git is not installed") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"git failed: {exc}") from None


def _git_file(source: str, cwd: Path) -> str | None:
    """`git show REF:PATH` in `cwd`; None if REF or PATH does not exist there."""
    ref, sep, path = source[len(GIT_PREFIX):].partition(":")
    if not sep or not ref or not path:
        raise UsageError(f"invalid baseline source {source!r}: expected git:REF:PATH, e.g. git:origin/main:.ci-grade/baseline.json")
    inside = _git(["rev-parse", "--is-inside-work-tree"], cwd)
    if inside.returncode != 0:
        raise InfrastructureError(f"cannot read {source}: {Path(cwd)} is not in a git repository ({_first_line(Exception(inside.stderr))})")
    if _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).returncode != 0:
        return None
    if _git(["cat-file", "-e", f"{ref}:{path}"], cwd).returncode != 0:
        return None
    shown = _git(["show", f"{ref}:{path}"], cwd)
    if shown.returncode != 0:
        raise InfrastructureError(f"git show {ref}:{path} failed: {_first_line(Exception(shown.stderr))}")
    return shown.stdout
