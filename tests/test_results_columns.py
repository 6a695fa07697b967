"""The results JSON points rows at promptfoo's columns: `promptIdx` is the prompt x provider column
of `results.prompts` (providers in order, each with the prompts it allows), `promptId` is that
column's prompt id (the sha256 of its label), and a failing row repeats its reason in `error`.
ci-grade reads its own files back with its own indexes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ci_grade.results.promptfoo import read_results
from tests.conftest import run_cli, write

CONFIG = """
prompts:
  - {raw: 'Hi {{name}}', label: hi}
  - {raw: 'Bye {{name}}', label: bye}
providers:
  - echo
  - {id: echo, label: e2, prompts: [bye]}
tests:
  - vars: {name: Ann}
    assert: [{type: contains, value: Ann}]
  - vars: {name: Bob}
    assert: [{type: contains, value: zzz}]
"""


def test_rows_point_at_their_prompt_x_provider_column(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", CONFIG)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 1, result.err
    data = json.loads((tmp_path / "out.json").read_text())["results"]
    columns = [(p["provider"], p["label"]) for p in data["prompts"]]
    assert columns == [("echo", "hi"), ("echo", "bye"), ("e2", "bye")]
    assert [p["id"] for p in data["prompts"]] == [hashlib.sha256(label.encode()).hexdigest() for _, label in columns]
    for row in data["results"]:
        column = data["prompts"][row["promptIdx"]]
        assert (column["provider"], column["label"]) == (row["provider"]["label"] or row["provider"]["id"], row["prompt"]["label"])
        assert row["promptId"] == column["id"]
        assert row["error"] == (None if row["success"] else row["gradingResult"]["reason"])
    assert sorted(p["metrics"]["testPassCount"] for p in data["prompts"]) == [1, 1, 1]
    back = read_results(str(tmp_path / "out.json"))
    assert sorted((r.prompt_index, r.provider_index, r.column_index) for r in back.results) == [(0, 0, 0), (0, 0, 0), (1, 0, 1), (1, 0, 1), (1, 1, 2), (1, 1, 2)]
    assert all(r.error is None for r in back.results)  # a failure's reason is not an error read back


def test_an_assert_set_holds_its_results_and_they_follow_it(tmp_path: Path) -> None:
    """As promptfoo writes them: the set's entry has its children's results inside it, and the
    flat list repeats them after it."""
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: abc}\n    assert:\n      - type: assert-set\n        assert: [{type: contains, value: a}, {type: contains, value: z}]\n")
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 1, result.err
    (row,) = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    flat = row["gradingResult"]["componentResults"]
    assert [(c["assertion"]["type"], c["pass"]) for c in flat] == [("assert-set", False), ("contains", True), ("contains", False)]
    assert [(c["assertion"]["value"], c["pass"]) for c in flat[0]["componentResults"]] == [("a", True), ("z", False)]
    back = read_results(str(tmp_path / "out.json")).results[0]
    assert [len(a.children) for a in back.assertions] == [2]  # read back once, not twice
