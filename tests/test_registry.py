"""The assertion registry checks itself: complete against promptfoo's documented types, and every
type's metadata consistent with its handler and its grader prompt."""

from __future__ import annotations

import inspect
import re
from importlib import resources
from pathlib import Path

import pytest

from ci_grade.config.assertion_types import PROMPTFOO_ASSERTION_TYPES
from ci_grade.grading import registry
from ci_grade.grading.grader_prompts import load_template
from ci_grade.grading.scoring import PassRule

REPO = Path(__file__).resolve().parent.parent
# promptfoo types ci-grade does not run; each is named in docs/compatibility.md.
NOT_SUPPORTED = {
    "human", "agent-rubric",
}


def test_registry_is_complete_against_promptfoos_documented_types() -> None:
    registered = registry.names()
    assert len(registered) >= 50
    assert registered - PROMPTFOO_ASSERTION_TYPES == set(), "a registered type promptfoo does not document"
    assert PROMPTFOO_ASSERTION_TYPES - registered - {"assert-set"} == NOT_SUPPORTED
    compatibility = (REPO / "docs" / "compatibility.md").read_text()
    for name in NOT_SUPPORTED:
        assert f"`{name}`" in compatibility


@pytest.mark.parametrize("name", ["human", "agent-rubric", "not-human"])
def test_types_refused_by_design_exit_2_with_why(tmp_path: Path, name: str) -> None:
    from tests.conftest import run_cli, write

    write(tmp_path / "promptfooconfig.yaml", f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert:\n      - type: {name}\n        value: x\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert f"promptfooconfig.yaml:5 tests[0].assert[0].type: assertion type '{name}' is not supported by ci-grade: " in result.err
    assert ("agentic grading provider" if "agent" in name else "graded by a person") in result.err


@pytest.mark.parametrize("name", sorted(registry.names()))
def test_metadata_fits_the_handler(name: str) -> None:
    spec = registry.get(name)
    assert spec is not None and spec.name == name
    parameters = list(inspect.signature(spec.handler).parameters)
    if spec.comparison:
        assert parameters == ["contexts"]
    elif spec.graded:
        assert len(parameters) == 2, "a prompt-based handler takes (ctx, session)"
        scoring = load_template(spec.prompt or "").scoring
        assert scoring is not None, f"{spec.prompt}.yaml has no scoring section"
        if scoring.rule in (PassRule.AT_LEAST, PassRule.ABOVE):
            assert spec.default_threshold is not None, "a threshold rule needs a default threshold"
        assert spec.handles_inverse and spec.model_graded
    else:
        assert len(parameters) == 1
    if spec.grader is not None:
        assert spec.model_graded


def test_every_grader_prompt_is_used_and_scoring_sections_parse() -> None:
    folder = resources.files("ci_grade.grading").joinpath("prompts")
    names = sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))
    assert len(names) >= 14
    sources = "\n".join(path.read_text() for path in (REPO / "ci_grade" / "grading").rglob("*.py"))
    for name in names:
        assert re.search(rf"""["']{re.escape(name)}["']""", sources), f"prompts/{name}.yaml is not used"
        template = load_template(name)
        assert template.messages
        if template.scoring is not None:
            assert all(0 <= score <= 1 for score in template.scoring.choices.values())


def test_csv_thresholds_come_from_the_registry() -> None:
    vocabulary = registry.vocabulary()
    assert vocabulary.csv_thresholds["similar"] == 0.8
    assert vocabulary.csv_thresholds["context-recall"] == 0.75
    assert "llm-rubric" not in vocabulary.csv_thresholds
    assert vocabulary.names >= PROMPTFOO_ASSERTION_TYPES


def test_a_required_value_is_checked_from_the_registry() -> None:
    spec = registry.get("contains")
    assert spec is not None and spec.value is not None
    with pytest.raises(Exception, match="not-contains needs a value"):
        spec.value.check(None, "not-contains", "contains")
    spec.value.check(" ", "contains", "contains")  # a blank needle is a value for contains
    levenshtein = registry.get("levenshtein")
    assert levenshtein is not None and levenshtein.value is not None and levenshtein.default_threshold == 5
    with pytest.raises(Exception, match="needs a string value"):
        levenshtein.value.check({"a": 1}, "levenshtein", "levenshtein")
