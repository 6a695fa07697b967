"""The benchmark suites: promptfoo configs that both ci-grade and promptfoo run unchanged.

`deterministic`: N echo tests, each with `contains`, `regex` and `javascript`; every tenth test is
about shipping rather than billing, so its `javascript` assertion fails (the failure path is
exercised and the two tools' pass/fail counts can be checked against each other).

`grader`: N echo tests, each with one `llm-rubric`, graded by an OpenAI-compatible server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GRADER_VERDICT = json.dumps({"reason": "meets the rubric", "pass": True, "score": 1.0})


@dataclass(frozen=True)
class Suite:
    """A written config and the pass/fail counts a correct run of it reports."""

    path: Path
    tests: int
    passes: int
    failures: int


def _header(description: str, prompt: str) -> list[str]:
    return [f"description: {description}", f"prompts: [{json.dumps(prompt)}]", "providers: [echo]", "tests:"]


def write_deterministic(folder: Path, tests: int) -> Suite:
    """N tests x (contains, regex, javascript) on the echo provider; every tenth fails."""
    lines = _header("deterministic benchmark", "Customer {{name}} asks about order #{{order}}: {{question}}")
    failures = 0
    for i in range(tests):
        topic = "shipping" if i % 10 == 9 else "billing"
        failures += topic == "shipping"
        order = 100000 + i
        lines += [
            f"  - description: case {i}",
            f"    vars: {{name: 'Customer {i}', order: {order}, question: 'why was my {topic} statement for last month different?'}}",
            "    assert:",
            "      - type: contains",
            f"        value: 'order #{order}'",
            "      - type: regex",
            "        value: '#\\d{6}: why'",
            "      - type: javascript",
            "        value: \"output.length > 40 && output.includes('billing')\"",
        ]
    path = folder / "promptfooconfig.yaml"
    path.write_text("\n".join(lines) + "\n")
    return Suite(path, tests, tests - failures, failures)


def write_grader(folder: Path, tests: int) -> Suite:
    """N tests x one `llm-rubric`, graded by the default (OpenAI) grader; all pass."""
    lines = _header("grader benchmark", "Answer the customer: {{question}}")
    for i in range(tests):
        lines += [
            f"  - description: case {i}",
            f"    vars: {{question: 'question number {i} about billing'}}",
            "    assert:",
            "      - type: llm-rubric",
            "        value: answers the billing question politely",
        ]
    path = folder / "promptfooconfig.yaml"
    path.write_text("\n".join(lines) + "\n")
    return Suite(path, tests, tests, 0)
