"""Helpers for the planner's tests: a plan built from a config text, and an eval's result rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ci_grade.config.loader import load_config
from ci_grade.grading import registry
from ci_grade.plan.build import Plan, PlanOptions, build_plan
from tests.conftest import run_cli, write


def plan_for(folder: Path, config: str, **options: Any) -> Plan:
    path = write(folder / "promptfooconfig.yaml", config)
    return build_plan(load_config([path], registry.vocabulary(), cwd=folder), PlanOptions(**options))


def eval_rows(folder: Path, config: str | None, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    if config is not None:
        write(folder / "promptfooconfig.yaml", config)
    result = run_cli("eval", "--no-progress", "-o", "out.json", *args, cwd=folder)
    out = folder / "out.json"
    rows = json.loads(out.read_text())["results"]["results"] if out.exists() else []
    return result.code, rows, result.err
