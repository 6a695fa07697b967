"""A compared run for the HTML report's tests and bench: regressions, fixes, known failures,
errors, changed outputs, two providers, named metrics, a traced trajectory and hostile text."""

from __future__ import annotations

from ci_grade.gate.baseline import baseline_from_run
from ci_grade.gate.compare import compare
from ci_grade.gate.models import GatePolicy
from ci_grade.report.document import Document, Part
from ci_grade.results.models import AssertionResult, SourceRef, TestResult
from tests.results_factory import row, run_of

HOSTILE = "</script><script>window.pwned = 1</script><img src=http://127.0.0.1:9/x.png>"
PROVIDERS = ("openai:gpt-4.1-mini", "anthropic:claude-sonnet-4")
STEPS = [{"type": "tool", "name": "search_orders", "args": {"order": "A-17"}}, {"type": "tool", "name": "refund", "args": {"amount": 20}}]


def _row(index: int, head: bool) -> TestResult:
    kind = index % 10
    name = f"test {index:04d}: " + ("refund policy" if kind == 0 else "greeting")
    passed = {0: not head, 1: head, 2: False}.get(kind, True)
    output = f"Hello customer {index}, your order ships today."
    if kind == 0:
        output = "Refunds take 5 days." if not head else "Refunds take 30 days, sorry."
    elif kind == 4 and head:
        output = f"Hi customer {index}! Your order ships tomorrow."
    elif kind == 5:
        output = HOSTILE
    metric = "accuracy" if index % 2 == 0 else "tone"
    score = 1.0 if passed else 0.0
    metadata = {"trajectory": STEPS} if kind == 0 and head else {}
    assertion = AssertionResult(
        type="llm-rubric" if kind == 0 else "contains", metric=metric, status="pass" if passed else "fail", score=score,
        reason="matches the rubric" if passed else "says 30 days where the policy says 5", metadata=metadata,
    )
    result = row(name, score, output=output, assertions=[assertion], metrics={metric: score}, provider=PROVIDERS[index % 2], prompt="support")
    result.prompt.raw = f"You are a support agent.\nCustomer {index} asks about their order."
    result.location = SourceRef(file="evals/promptfooconfig.yaml", line=10 + index)
    if head and kind == 3:
        result = result.model_copy(update={"status": "error", "error": "provider returned 500: overloaded", "score": 0.0})
    return result


def sample(tests: int = 20) -> Document:
    """`tests` tests compared with a baseline whose outputs the comparison carries."""
    base = run_of(*(_row(i, head=False) for i in range(tests)), description="support bot")
    head = run_of(*(_row(i, head=True) for i in range(tests)), description="support bot")
    comparison = compare(head, baseline_from_run(base), GatePolicy())
    outputs = {r.test_id: r.output for r in base.results}
    for case in comparison.tests:
        case.base_output = outputs.get(case.test_id)
    return Document([Part("evals/promptfooconfig.yaml", head, comparison)], title="Support bot evals", gate_report=True)
