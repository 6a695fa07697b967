"""The shared grading engine: weights, thresholds, metrics, assert-set, not-, transforms, errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ci_grade.grading import registry
from tests.conftest import run_cli, write


def run_config(tmp_path: Path, config: str) -> tuple[int, list[dict]]:
    write(tmp_path / "promptfooconfig.yaml", config)
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code in (0, 1), result.err
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    return result.code, rows


def components(row: dict) -> list[dict]:
    return row["gradingResult"]["componentResults"]


def test_all_must_pass_without_threshold(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello world}
            assert:
              - {type: contains, value: hello}
              - {type: contains, value: zzz}
        """,
    )
    assert code == 1
    (row,) = rows
    assert row["success"] is False and row["failureReason"] == 1
    assert row["score"] == pytest.approx(0.5)
    assert row["gradingResult"]["reason"] == 'Expected output to contain "zzz"'


def test_threshold_lets_weighted_score_decide(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello world}
            threshold: 0.6
            assert:
              - {type: contains, value: hello, weight: 3}
              - {type: contains, value: zzz}
        """,
    )
    assert code == 0
    assert rows[0]["score"] == pytest.approx(0.75)
    assert rows[0]["gradingResult"]["reason"] == "Aggregate score 0.75 ≥ 0.6 threshold"


def test_weight_zero_is_informational_and_metrics_are_weighted_means(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello world}
            assert:
              - {type: contains, value: zzz, weight: 0, metric: info}
              - {type: contains, value: hello, metric: quality, weight: 2}
              - {type: not-contains, value: bye, metric: quality}
              - {type: icontains, value: WORLD, metric: 'quality_{{q | length}}'}
        """,
    )
    assert code == 0
    row = rows[0]
    assert row["success"] is True
    assert row["score"] == pytest.approx(1.0)
    assert row["namedScores"] == {"info": 0.0, "quality": 1.0, "quality_11": 1.0}
    assert components(row)[0]["pass"] is True and components(row)[0]["score"] == 0.0


def test_a_failing_set_of_weight_zero_still_fails_the_test(tmp_path: Path) -> None:
    """promptfoo makes `weight: 0` pass only for single assertions; a set's failure is recorded
    whatever its weight (its weight only keeps its score out of the test's)."""
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: abc}
            assert:
              - {type: contains, value: a}
              - type: assert-set
                weight: 0
                assert:
                  - {type: contains, value: zzz}
              - type: assert-set
                assert:
                  - {type: contains, value: zzz, weight: 0}
        """,
    )
    assert code == 1
    (row,) = rows
    assert row["success"] is False and row["score"] == pytest.approx(0.5)
    sets = [c for c in components(row) if c["assertion"]["type"] == "assert-set"]
    assert [s["pass"] for s in sets] == [False, True]  # a weight-0 member of a set is informational


def test_assert_set_threshold_weight_and_flattened_components(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - description: set passes at its own threshold
            vars: {q: hello world}
            assert:
              - type: assert-set
                threshold: 0.5
                assert:
                  - {type: contains, value: hello}
                  - {type: contains, value: zzz}
          - description: set without threshold fails and weighs 2
            vars: {q: hello world}
            assert:
              - type: assert-set
                weight: 2
                assert:
                  - {type: contains, value: hello}
                  - {type: contains, value: zzz}
              - {type: contains, value: world}
        """,
    )
    assert code == 1
    first, second = rows
    assert first["success"] is True and first["score"] == pytest.approx(0.5)
    assert [c["assertion"]["type"] for c in components(first)] == ["assert-set", "contains", "contains"]
    assert second["success"] is False
    assert second["score"] == pytest.approx((0.5 * 2 + 1) / 3)
    assert second["gradingResult"]["reason"] == 'Expected output to contain "zzz"'


def test_not_prefix_inverts_and_error_is_never_inverted(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - description: inverted pass
            vars: {q: hello}
            assert: [{type: not-contains, value: bye}]
          - description: inverted error stays an error
            vars: {q: hello}
            assert: [{type: not-python, value: "__import__('os')._exit(3)"}]
        """,
    )
    assert code == 1
    inverted, errored = rows
    assert inverted["success"] is True
    assert errored["failureReason"] == 2
    (component,) = components(errored)
    assert component["pass"] is False
    assert component["metadata"]["ciGrade"]["status"] == "error"
    assert "the Python worker exited with status 3" in component["reason"]  # a thrown error fails instead


def test_transforms_apply_in_promptfoo_order(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers:
          - id: echo
            transform: output + ' [provider]'
        tests:
          - vars: {q: '{"items": ["a", "b"]}'}
            options:
              transform: JSON.parse(output.replace(' [provider]', ''))
            assert:
              - type: equals
                transform: output.items.join('-')
                value: a-b
              - type: javascript
                value: output.items.length === 2
        """,
    )
    assert code == 0, rows
    assert rows[0]["response"]["output"] == {"items": ["a", "b"]}


def test_a_broken_transform_is_an_error_row_and_the_run_goes_on(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: not json}
            options: {transform: JSON.parse(output)}
            assert: [{type: contains, value: x}]
          - vars: {q: fine}
            assert: [{type: contains, value: fine}]
        """,
    )
    assert code == 1
    broken, fine = rows
    assert broken["failureReason"] == 2 and "SyntaxError" in broken["error"]
    assert fine["success"] is True


def test_an_inline_transform_is_a_function_body_exactly_when_it_has_a_newline(tmp_path: Path) -> None:
    """As promptfoo: one line gets `return` before it (so one starting with `return` is a syntax
    error); text with a newline, a YAML block's final one included, is the body as written, so a
    block holding only an expression returns nothing, which is an error."""
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: abc}
            options: {transform: output.toUpperCase()}
            assert: [{type: equals, value: ABC}]
          - vars: {q: abc}
            options:
              transform: |
                return output.toUpperCase()
            assert: [{type: equals, value: ABC}]
          - vars: {q: abc}
            options:
              transform: |
                output.toUpperCase()
            assert: [{type: equals, value: ABC}]
          - vars: {q: abc}
            options: {transform: return output.toUpperCase()}
            assert: [{type: equals, value: ABC}]
        """,
    )
    assert code == 1
    assert [row["success"] for row in rows] == [True, True, False, False]
    assert rows[2]["failureReason"] == 2 and "returned no value" in rows[2]["error"]
    assert rows[3]["failureReason"] == 2 and "SyntaxError" in rows[3]["error"]


def test_provider_output_is_graded_without_a_call_and_no_assertions_pass(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {prompt: ignored}
            providerOutput: canned answer
            assert: [{type: equals, value: canned answer}]
          - vars: {prompt: also ignored}
            providerOutput: anything
        """,
    )
    assert code == 0
    assert rows[0]["response"]["output"] == "canned answer"
    assert rows[1]["gradingResult"]["reason"] == "No assertions"


def test_the_suite_cannot_reach_the_network(tmp_path: Path) -> None:
    """The conftest guard: a provider pointed at a real host fails per row, without a connection."""
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers:
          - id: openai:chat:gpt-4.1-mini
            config: {apiKey: sk-not-a-real-key, apiBaseUrl: 'https://api.openai.com/v1'}
        tests:
          - vars: {q: hello}
            assert: [{type: contains, value: hello}]
        """,
    )
    assert code == 1
    assert rows[0]["failureReason"] == 2


def test_an_unexpected_exception_in_a_handler_is_an_error_never_a_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug inside one handler (here: `contains` raising) errors that assertion and its row only."""

    async def broken(ctx: object) -> object:
        raise RuntimeError("handler bug")

    spec = registry.get("contains")
    assert spec is not None
    monkeypatch.setitem(registry._REGISTRY, "contains", dataclasses.replace(spec, handler=broken))
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - description: bug
            vars: {q: hello}
            assert: [{type: contains, value: hello}, {type: icontains, value: HELLO}]
          - description: informational bug
            vars: {q: hello}
            assert: [{type: contains, value: hello, weight: 0}, {type: icontains, value: HELLO}]
          - description: inverted bug
            vars: {q: hello}
            assert: [{type: not-contains, value: bye}]
        """,
    )
    assert code == 1
    bug, informational, inverted = rows
    broken_part, fine = components(bug)
    assert (broken_part["pass"], broken_part["score"], broken_part["metadata"]["ciGrade"]["status"]) == (False, 0, "error")
    assert broken_part["reason"] == "RuntimeError: handler bug"
    assert fine["pass"] is True
    assert bug["success"] is False and bug["failureReason"] == 2
    assert bug["error"] == "contains could not be graded: RuntimeError: handler bug"
    # weight 0: the row's verdict ignores it, but the component still shows the error, not a pass
    zero, _ = components(informational)
    assert zero["pass"] is False and zero["metadata"]["ciGrade"]["status"] == "error"
    assert informational["success"] is True and informational["score"] == pytest.approx(1.0)
    # not- never turns an error into a pass
    (not_part,) = components(inverted)
    assert not_part["pass"] is False and not_part["metadata"]["ciGrade"]["status"] == "error" and inverted["failureReason"] == 2


def test_a_weight_zero_error_stays_an_error_and_its_failure_is_informational(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello}
            assert:
              - {type: python, value: "__import__('os')._exit(3)", weight: 0, metric: info}
              - {type: contains, value: zzz, weight: 0}
              - {type: contains, value: hello}
        """,
    )
    assert code == 0
    (row,) = rows
    errored, failed, passed = components(row)
    assert errored["metadata"]["ciGrade"]["status"] == "error" and errored["pass"] is False and "exited with status 3" in errored["reason"]
    assert failed["metadata"]["ciGrade"]["status"] == "pass" and failed["pass"] is True and failed["score"] == 0
    assert passed["pass"] is True
    assert row["success"] is True and row["score"] == pytest.approx(1.0)


def test_named_scores_weigh_each_assertion_and_sets_count_once(tmp_path: Path) -> None:
    code, rows = run_config(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [echo]
        tests:
          - vars: {q: hello world}
            assert:
              - {type: contains, value: hello, metric: quality, weight: 3}
              - {type: contains, value: zzz, metric: quality, weight: 1}
              - {type: contains, value: world, metric: other, weight: 0}
              - {type: contains, value: zzz, metric: other, weight: 0}
        """,
    )
    assert code == 1
    assert rows[0]["namedScores"] == {"quality": pytest.approx(0.75), "other": pytest.approx(0.5)}
    assert rows[0]["score"] == pytest.approx(0.75)
