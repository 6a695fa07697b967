"""Baselines keep each test's output (capped, secrets masked) and the summaries of the last runs."""

from __future__ import annotations

import json
from pathlib import Path

from ci_grade import redact
from ci_grade.gate.baseline import OUTPUT_CHARS, baseline_from_run, baseline_from_runs
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.gate.store import load_baseline, save_baseline
from ci_grade.results.models import EvalRun
from ci_grade.results.promptfoo import to_promptfoo
from tests.conftest import run_cli
from tests.results_factory import row, run_of


def _run(day: int, score: float, output: object = "ok", **rows: float):
    return run_of(
        row("a", score, output=output, metrics={"tone": score}),
        row("b", 1.0),
        *(row(name, value) for name, value in rows.items()),
        created_at=f"2026-01-{day:02d}T10:00:00+00:00", commit=f"{day:02d}" * 20,
    )


def test_outputs_are_kept_cut_and_masked(tmp_path: Path) -> None:
    secret = "hunter2-private-value"
    long = "x" * (OUTPUT_CHARS + 500)
    run = run_of(row("long", output=long), row("data", output={"answer": 42}), row("leak", output=f"key {secret}"), row("again", 0.0, output=None))
    path = tmp_path / "baseline.json"
    with redact.use(redact.Redactor([secret])):  # a secret the run learned (e.g. from its env)
        save_baseline(baseline_from_run(run), path)
    text = path.read_text()
    assert secret not in text
    tests = {t.name: t for t in load_baseline(str(path), tmp_path).tests.values()}  # type: ignore[union-attr]
    assert len(tests["long"].output or "") == OUTPUT_CHARS and tests["long"].output.endswith("…")  # type: ignore[union-attr]
    assert tests["data"].output == '{"answer": 42}'
    assert tests["leak"].output is not None and tests["leak"].output.startswith("key ") and secret not in tests["leak"].output
    assert tests["again"].output is None


def test_older_baselines_without_outputs_still_compare(tmp_path: Path) -> None:
    data = json.loads(baseline_from_run(_run(1, 1.0)).model_dump_json())
    for test in data["tests"].values():
        del test["output"]
    del data["history"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = load_baseline(str(path), tmp_path)
    assert old is not None and old.history == []
    c = compare(_run(2, 0.0, output="bad"), old, GatePolicy(), every_test=True)
    (case,) = c.regressions
    assert case.output == "bad" and case.base_output is None


def test_a_regression_carries_the_baselines_output() -> None:
    c = compare(_run(2, 0.0, output="new reply"), baseline_from_run(_run(1, 1.0, output="old reply")), GatePolicy())
    (case,) = c.regressions
    assert (case.base_output, case.output) == ("old reply", "new reply")


def test_saving_carries_the_history_and_keeps_the_last_runs(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    for day in range(1, 6):
        save_baseline(baseline_from_run(_run(day, day / 10, c=0.0)), path, keep=3)
    history = load_baseline(str(path), tmp_path).history  # type: ignore[union-attr]
    assert [p.created_at[:10] for p in history] == ["2026-01-03", "2026-01-04", "2026-01-05"]
    last = history[-1]
    assert (last.tests, last.passed, last.commit) == (3, 2, "05" * 20)  # a (0.5 passes) and b pass; c fails
    assert last.pass_rate == 2 / 3 and abs((last.mean_score or 0) - (0.5 + 1.0 + 0.0) / 3) < 1e-9
    assert last.metrics == {"tone": 0.5}
    save_baseline(baseline_from_run(_run(5, 0.5, c=0.0)), path, keep=3)  # the same run again: not twice
    assert len(load_baseline(str(path), tmp_path).history) == 3  # type: ignore[union-attr]
    save_baseline(baseline_from_run(_run(6, 1.0)), path, keep=1)
    assert [p.created_at[:10] for p in load_baseline(str(path), tmp_path).history] == ["2026-01-06"]  # type: ignore[union-attr]
    save_baseline(baseline_from_run(_run(7, 1.0)), path, keep=0)
    assert load_baseline(str(path), tmp_path).history == []  # type: ignore[union-attr]


def test_history_points_saved_before_costs_were_kept_read_as_nothing_spent(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    save_baseline(baseline_from_run(_run(1, 1.0)), path)
    data = json.loads(path.read_text())
    del data["history"][0]["cost"]
    path.write_text(json.dumps(data))
    spent = _run(2, 1.0)
    spent.results[0].cost = 0.25
    spent.stats = EvalRun.summarize(spent.results)
    save_baseline(baseline_from_run(spent), path)
    assert [p["cost"] for p in json.loads(path.read_text())["history"]] == [0.0, 0.25]


def test_several_runs_saved_together_are_each_a_point() -> None:
    baseline = baseline_from_runs([_run(1, 1.0), _run(2, 0.0)])
    assert [p.passed for p in baseline.history] == [2, 1]


def test_cli_history_flag(tmp_path: Path) -> None:
    for day in (1, 2, 3):
        (tmp_path / f"r{day}.json").write_text(json.dumps(to_promptfoo(_run(day, 1.0))))
    for day in (1, 2, 3):
        result = run_cli("baseline", "save", f"r{day}.json", "-o", "b.json", "--history", "2", cwd=tmp_path)
        assert result.code == 0, result.err
    history = json.loads((tmp_path / "b.json").read_text())["history"]
    assert [p["commit"] for p in history] == ["02" * 20, "03" * 20]
    bad = run_cli("baseline", "save", "r1.json", "--history", "-1", cwd=tmp_path)
    assert bad.code == 2 and "--history" in bad.err
