"""`--filter-failing`, `--filter-failing-only`, `--filter-errors-only`: rerun what did not pass.

Each names an earlier results file (ci-grade's or promptfoo's) and keeps the tests it holds as not
passing (`failing`: failed or errored; `failing-only`: failed; `errors-only`: errored): as in
promptfoo, a test with its variables reruns whole, on every prompt and provider, when any of its
rows in the file did not pass. A row of this plan matches one in the file by its stable test id,
or, in a file without those ids (promptfoo's), by its variables (runtime ones, `_conversation`
and the like, left out) and its provider, as promptfoo matches them. Several of these flags keep
the tests any of them keeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_grade.results.promptfoo import portable_provider

STATUSES = {"failing": frozenset({"fail", "error"}), "failing-only": frozenset({"fail"}), "errors-only": frozenset({"error"})}
"""What each flag (`--filter-KIND`) keeps, by row status."""


@dataclass(frozen=True)
class EarlierRows:
    """The rows of an earlier results file that one `--filter-KIND PATH` keeps."""

    kind: str
    path: str
    ids: frozenset[str]
    keys: frozenset[tuple[str, str]]
    """(variables, provider id) of each kept row, for files whose ids are not ci-grade's."""
    vars_keys: frozenset[str] = frozenset()

    @classmethod
    def read(cls, kind: str, path: str) -> EarlierRows:
        from ci_grade.results.promptfoo import read_results

        run = read_results(path)  # exit 2 naming the file when it is missing or not results
        statuses = STATUSES[kind]
        rows = [row for row in run.results if row.status in statuses]
        by_id = bool(run.info.plan_hash)  # written by ci-grade: its ids are stable test ids
        return cls(
            kind,
            path,
            frozenset(row.test_id for row in rows) if by_id else frozenset(),
            frozenset() if by_id else frozenset((vars_key(row.vars), portable_provider(row.provider.id)) for row in rows),
            frozenset() if by_id else frozenset(vars_key(row.vars) for row in rows),
        )

    def keeps(self, test_id: str, variables: Mapping[str, Any], own_provider: str | None) -> bool:
        """Whether the earlier file kept this test: by its stable id, or, as promptfoo matches
        (`resultIsForTestCase`), by its variables, and by provider only where the test names its own."""
        if test_id in self.ids:
            return True
        if own_provider is None:
            return vars_key(variables) in self.vars_keys
        return (vars_key(variables), portable_provider(own_provider)) in self.keys

    def explain(self) -> str:
        """Why this filter may have kept nothing."""
        if not self.ids and not self.keys:
            return f"--filter-{self.kind} {self.path} keeps no test: the file holds no {_HELD[self.kind]} rows"
        return f"--filter-{self.kind} {self.path} keeps no test of this config: its tests changed since that run"


_HELD = {"failing": "failed or errored", "failing-only": "failed", "errors-only": "errored"}


def vars_key(variables: Mapping[str, Any]) -> str:
    """A row's variables as promptfoo compares them: without runtime ones (`_conversation`, ...)."""
    kept = {key: value for key, value in variables.items() if not str(key).startswith("_") and key != "sessionId"}
    return json.dumps(kept, sort_keys=True, ensure_ascii=False, default=str)
