"""Helpers for assertion tests: run a promptfoo config through `ci-grade eval` and read the results."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import run_cli, write


@dataclass
class Outcome:
    """One component result of a results row, as written to the results JSON."""

    status: str
    passed: bool
    score: float
    reason: str
    raw: dict[str, Any]


def evaluate(tmp_path: Path, config: dict[str, Any] | str) -> list[dict[str, Any]]:
    """Write the config (a mapping is written as JSON, which is YAML), run eval, return the rows."""
    text = json.dumps(config) if isinstance(config, dict) else config
    write(tmp_path / "promptfooconfig.yaml", text)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code in (0, 1), result.err
    return json.loads((tmp_path / "out.json").read_text())["results"]["results"]


def outcome(component: dict[str, Any]) -> Outcome:
    return Outcome(component["metadata"]["ciGrade"]["status"], component["pass"], component["score"], component["reason"], component)


def first(row: dict[str, Any]) -> Outcome:
    return outcome(row["gradingResult"]["componentResults"][0])


def grade_outputs(tmp_path: Path, cases: dict[str, tuple[Any, dict[str, Any]]], **config: Any) -> dict[str, Outcome]:
    """Grade canned outputs: {description: (providerOutput, assertion)} -> {description: Outcome}."""
    tests = [
        {"description": name, "vars": {"case": name}, "providerOutput": output, "assert": [assertion]}
        for name, (output, assertion) in cases.items()
    ]
    rows = evaluate(tmp_path, {"prompts": ["{{case}}"], "providers": ["echo"], "tests": tests, **config})
    assert len(rows) == len(cases)
    return {row["description"]: first(row) for row in rows}
