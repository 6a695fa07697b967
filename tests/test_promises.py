"""Five user-visible promises pinned end to end: each test fails when its behaviour breaks.

- a weight-0 `python` assertion returning a non-finite score is an ERROR of that assertion, not a pass;
- a weight-0 `max-score` with a single output neither errors nor fails its row, nor the gate;
- a saved baseline holds no absolute path of the machine it was saved on;
- `--min-pass-rate` is a strict floor: 2 of 3 passing is under 0.67 and fails the gate;
- a `python` assertion's `threshold` is exact: 0.78 under 0.8 fails, 0.8 passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli, write


def _rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(path.read_text())["results"]["results"]
    return rows


def test_a_weight_0_python_assertion_with_a_nan_score_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['hi {{x}}']
        providers: [echo]
        tests:
          - vars: {x: 1}
            assert:
              - type: contains
                value: hi
              - type: python
                weight: 0
                value: "{'pass': True, 'score': float('nan')}"
    """)
    result = run_cli("eval", "-c", "promptfooconfig.yaml", "-o", "r.json", cwd=tmp_path)
    (row,) = _rows(tmp_path / "r.json")
    contains, python = row["gradingResult"]["componentResults"]
    assert contains["pass"] is True
    assert python["pass"] is False, "a NaN score is no pass, whatever its weight"
    assert python["metadata"]["ciGrade"]["status"] == "error"
    assert "NaN" in python["reason"]
    assert result.code == 0, "weight 0: the error is reported but does not decide the row"


def test_a_weight_0_max_score_with_one_output_passes_its_row_and_the_gate(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['hi {{x}}']
        providers: [echo]
        tests:
          - vars: {x: 1}
            assert:
              - type: contains
                value: hi
              - type: max-score
                weight: 0
    """)
    result = run_cli("eval", "-c", "promptfooconfig.yaml", "-o", "r.json", cwd=tmp_path)
    assert result.code == 0, result.out + result.err
    assert "PASSED" in result.out
    (row,) = _rows(tmp_path / "r.json")
    assert row["success"] is True
    assert row["error"] is None
    assert row["metadata"]["ciGrade"]["status"] == "pass"


def test_a_saved_baseline_names_no_absolute_path(tmp_path: Path) -> None:
    project = tmp_path / "deep" / "project"
    write(project / "evals" / "promptfooconfig.yaml", """
        prompts: [file://prompt.txt]
        providers: [echo]
        tests:
          - vars: {x: 1}
            assert: [{type: contains, value: hi}]
          - vars: {x: file://x.txt}
            assert: [{type: contains, value: hi}]
    """)
    write(project / "evals" / "prompt.txt", "hi {{x}}")
    write(project / "evals" / "x.txt", "two")
    config = project / "evals" / "promptfooconfig.yaml"
    result = run_cli("eval", "-c", str(config), "--save-baseline", str(project / "b.json"), cwd=tmp_path)
    assert result.code == 0, result.out + result.err
    text = (project / "b.json").read_text()
    assert json.loads(text)["tests"], "the baseline holds the tests"
    assert str(tmp_path) not in text
    assert "/deep/project" not in text


def _two_of_three(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['hi {{x}}']
        providers: [echo]
        tests:
          - vars: {x: a}
            assert: [{type: contains, value: a}]
          - vars: {x: b}
            assert: [{type: contains, value: b}]
          - vars: {x: c}
            assert: [{type: contains, value: nope}]
    """)


def test_min_pass_rate_is_a_strict_floor(tmp_path: Path) -> None:
    _two_of_three(tmp_path)
    under = run_cli("eval", "-c", "promptfooconfig.yaml", "--min-pass-rate", "0.67", cwd=tmp_path)
    assert under.code == 1, "2/3 = 66.7% is under 67%"
    assert "below the minimum" in under.out
    over = run_cli("eval", "-c", "promptfooconfig.yaml", "--min-pass-rate", "0.666", cwd=tmp_path)
    assert over.code == 0, over.out


def test_a_python_threshold_is_exact(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['hi {{x}}']
        providers: [echo]
        tests:
          - description: under
            vars: {x: 1}
            assert: [{type: python, threshold: 0.8, value: "0.78"}]
          - description: at
            vars: {x: 2}
            assert: [{type: python, threshold: 0.8, value: "0.8"}]
    """)
    result = run_cli("eval", "-c", "promptfooconfig.yaml", "-o", "r.json", cwd=tmp_path)
    outcome = {row["description"]: row["success"] for row in _rows(tmp_path / "r.json")}
    assert outcome == {"under": False, "at": True}
    assert result.code == 1
