"""`eval --retry-errors PREVIOUS.json`: run again only what failed to run, keep everything else.

The previous results must be of the same plan (the same `plan_hash`: config, filters, repeats,
variables); a shard's results are retried as that shard. A row is re-run when it errored (a
provider or grader failure) or is missing from the previous file; every row of a test with a
select-best or max-score assertion is re-run together when one of them is, since those grade
the outputs side by side. The other rows are kept exactly as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ci_grade.errors import UsageError
from ci_grade.grading import registry
from ci_grade.plan.build import Plan, PlannedRow
from ci_grade.plan.shard import Shard
from ci_grade.results.models import EvalRun, TestResult
from ci_grade.results.promptfoo import read_results

RowKey = tuple[str, int]  # (stable test id, repeat index)


@dataclass
class Previous:
    """An earlier results file to retry."""

    path: str
    run: EvalRun

    @classmethod
    def read(cls, path: str) -> Previous:
        run = read_results(path)
        if not run.info.plan_hash:
            raise UsageError(f"--retry-errors {path}: the file records no plan fingerprint (written by promptfoo or an older ci-grade), so it cannot be matched to this config")
        return cls(path, run)

    def shard(self, requested: Shard | None) -> Shard | None:
        """The shard to plan: the previous file's, which `requested` (if given) must equal."""
        info = self.run.info.shard
        recorded = Shard(info.index, info.count) if info else None
        if requested is not None and requested != recorded:
            raise UsageError(f"--retry-errors {self.path} holds {f'shard {recorded}' if recorded else 'a whole run'}, not shard {requested}")
        return recorded


@dataclass
class Retry:
    """What to run again and what to keep, in plan order."""

    order: list[RowKey]
    kept: dict[RowKey, TestResult]
    previous: EvalRun

    @property
    def rerun(self) -> int:
        return len(self.order) - len(self.kept)


def key_of(row: PlannedRow | TestResult) -> RowKey:
    return (row.test_id, row.repeat_index)


def plan_retry(plan: Plan, previous: Previous) -> tuple[Plan, Retry]:
    """The part of `plan` to run again, and the previous rows to keep."""
    if previous.run.info.plan_hash != plan.fingerprint:
        raise UsageError(
            f"--retry-errors {previous.path} holds results of another config or plan (fingerprint {previous.run.info.plan_hash}, "
            f"this plan {plan.fingerprint}: the config, a test file, the filters or the repeats differ)"
        )
    old = {key_of(row): row for row in previous.run.results}
    unexpected = len(set(old) - {key_of(row) for row in plan.rows})
    if unexpected:
        raise UsageError(f"--retry-errors {previous.path} holds {unexpected} rows that are not in this plan")
    again = {row.test_index for row in plan.rows if _needs_run(old.get(key_of(row)))}
    compared = {row.test_index for row in plan.rows if row.test_index in again and _compares(row)}
    rows = [row for row in plan.rows if _needs_run(old.get(key_of(row))) or row.test_index in compared]
    keys = {key_of(row) for row in rows}
    kept = {key: row for key, row in old.items() if key not in keys}
    return replace(plan, rows=rows), Retry([key_of(row) for row in plan.rows], kept, previous.run)


def combine(retry: Retry, fresh: EvalRun) -> EvalRun:
    """Complete results: the fresh rows and the kept ones in plan order, statistics recomputed."""
    new = {key_of(row): row for row in fresh.results}
    results = [retry.kept[key] if key in retry.kept else new[key] for key in retry.order]
    run = EvalRun(info=fresh.info, results=results, stats=EvalRun.summarize(results), warnings=fresh.warnings)
    run.stats.duration_ms = retry.previous.stats.duration_ms + fresh.stats.duration_ms
    run.info.graders = sorted({*retry.previous.info.graders, *fresh.info.graders})
    run.info.grader_templates = dict(sorted({**retry.previous.info.grader_templates, **fresh.info.grader_templates}.items()))
    return run


def _needs_run(row: TestResult | None) -> bool:
    return row is None or row.status == "error"


def _compares(row: PlannedRow) -> bool:
    for assertion in row.test.assert_ or []:
        spec = registry.get(assertion.base_type)
        if spec and spec.comparison:
            return True
    return False
