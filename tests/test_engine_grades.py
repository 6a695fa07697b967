"""How the grading engine turns handler grades into results: scores of errored grades, template
rendering of values, inverted grades keeping cost and metadata, and the row's reason."""

from __future__ import annotations

from pathlib import Path

from tests.assertion_runs import grade_outputs


def test_a_value_with_a_block_tag_is_rendered(tmp_path: Path) -> None:
    r = grade_outputs(tmp_path, {"tag": ("yes", {"type": "equals", "value": "{% if case %}yes{% endif %}"})})
    assert r["tag"].passed, r["tag"].reason
