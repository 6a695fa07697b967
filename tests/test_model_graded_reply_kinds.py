"""A grader whose reply is a number or a list (a script grader, a parsed JSON reply) is reported as
such, not as an empty reply; a numeric index is a valid select-best verdict."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write
from tests.model_graded_helpers import run_eval, status

GRADER = '''
import json


def call_api(prompt, options, context):
    """Replies by the marker the test put in the criterion: JSON numbers and lists, parsed."""
    for marker, reply in (("REPLY-NUMBER", 7), ("REPLY-LIST", [1, "Y"]), ("REPLY-INDEX", 1), ("REPLY-FLOAT", 0.5)):
        if marker in prompt:
            return {"output": reply}
    return {"output": "unexpected"}
'''

CONFIG = """
prompts: ['Question: {{q}}', 'Short question: {{q}}']
providers: [{id: echo, transform: '"An answer."'}]
defaultTest:
  options: {provider: file://grader.py}
tests:
  - vars: {q: rubric-number}
    assert: [{type: llm-rubric, value: REPLY-NUMBER}]
  - vars: {q: rubric-list}
    assert: [{type: llm-rubric, value: REPLY-LIST}]
  - vars: {q: closedqa-list}
    assert: [{type: model-graded-closedqa, value: REPLY-LIST}]
  - vars: {q: factuality-number}
    assert: [{type: factuality, value: REPLY-NUMBER}]
  - vars: {q: geval-number}
    assert: [{type: g-eval, value: REPLY-NUMBER}]
  - vars: {q: best-index}
    assert: [{type: select-best, value: REPLY-INDEX}]
  - vars: {q: best-list}
    assert: [{type: select-best, value: REPLY-LIST}]
  - vars: {q: best-fraction}
    assert: [{type: select-best, value: REPLY-FLOAT}]
"""


def test_number_and_list_replies_are_named_not_called_empty(tmp_path: Path) -> None:
    write(tmp_path / "grader.py", GRADER)
    result = run_eval(tmp_path, CONFIG)
    first_prompt = {row["vars"]["q"]: row["gradingResult"]["componentResults"][0] for row in result.rows if row["promptIdx"] == 0}
    second_prompt = {row["vars"]["q"]: row["gradingResult"]["componentResults"][0] for row in result.rows if row["promptIdx"] == 1}
    expected_errors = {
        "rubric-number": "grader replied with a number (7), not a JSON object with 'pass'",
        "rubric-list": 'grader replied with a list ([1, "Y"]), not a JSON object with \'pass\'',
        "closedqa-list": 'grader replied with a list ([1, "Y"]), not text ending in Y or N',
        "factuality-number": "grader replied with a number (7), not a category",
        "geval-number": "g-eval steps: grader replied with a number (7), not a JSON object with 'steps'",
        "best-list": 'grader replied with a list ([1, "Y"]), not an output index',
        "best-fraction": "grader replied with a number (0.5), not an output index",
    }
    for name, reason in expected_errors.items():
        component = first_prompt[name]
        assert status(component) == "error" and reason in component["reason"], (name, component["reason"])
        assert "empty reply" not in component["reason"]
    assert (first_prompt["best-index"]["pass"], second_prompt["best-index"]["pass"]) == (False, True)
    assert second_prompt["best-index"]["reason"] == "Output selected as the best: REPLY-INDEX"
