"""Compare and gate rules: regressions, tolerances, metrics, renames, errors, noise, fail-on modes."""

from __future__ import annotations

import pytest

from ci_grade.gate.baseline import baseline_from_run, baseline_from_runs
from ci_grade.gate.compare import compare
from ci_grade.gate.models import Comparison, GateNote, GatePolicy
from ci_grade.results.models import AssertionResult
from tests.results_factory import row, run_of


def judge(base_rows: list, head_rows: list, **policy: object) -> Comparison:
    return compare(run_of(*head_rows), baseline_from_run(run_of(*base_rows)), GatePolicy(**policy))


def by_name(c: Comparison, name: str):
    (case,) = [t for t in c.tests if t.name == name]
    return case


def test_unchanged_run_passes() -> None:
    c = judge([row("a", 1.0), row("b", 0.8)], [row("a", 1.0), row("b", 0.8)])
    assert (c.verdict, c.gate_failed, c.has_baseline) == ("passed", False, True)
    assert c.reason == "all 2 tests passed; no regressions against the baseline"
    assert c.regressions == [] and c.problems == []
    assert by_name(c, "b").delta == pytest.approx(0.0)


def test_drop_beyond_tolerance_is_a_regression() -> None:
    c = judge([row("a", 0.9), row("b", 1.0)], [row("a", 0.6), row("b", 1.0)], max_metric_drop=1.0)
    case = by_name(c, "a")
    assert case.regressed and not case.inconclusive and not case.new_failure
    assert case.delta == pytest.approx(-0.3)
    assert (c.verdict, c.gate_failed) == ("regressed", True)
    assert c.reason == "1 test regressed beyond tolerance (max drop 0.10)"
    assert {k: n.text for k, n in c.gate_notes().items() if n.kind == "regression"} == {case.test_id: "score 0.90 -> 0.60 (-0.30)"}


def test_drop_within_tolerance_is_not_a_regression() -> None:
    c = judge([row("a", 0.9)], [row("a", 0.82)], max_metric_drop=0.5)
    case = by_name(c, "a")
    assert not case.regressed and not case.inconclusive
    assert c.verdict == "passed" and not c.gate_failed


def test_exactly_the_tolerance_is_tolerated() -> None:
    c = judge([row("a", 0.9)], [row("a", 0.8)], max_metric_drop=0.5)
    assert not by_name(c, "a").regressed


def test_named_metric_drop_beyond_tolerance_regresses() -> None:
    base = [row("a", 1.0, metrics={"accuracy": 0.9, "tone": 1.0}), row("b", 1.0, metrics={"accuracy": 0.9})]
    head = [row("a", 1.0, metrics={"accuracy": 0.85, "tone": 1.0}), row("b", 1.0, metrics={"accuracy": 0.85})]
    c = judge(base, head)
    accuracy = next(m for m in c.metrics if m.name == "accuracy")
    tone = next(m for m in c.metrics if m.name == "tone")
    assert accuracy.regressed and accuracy.delta == pytest.approx(-0.05) and accuracy.tests == 2
    assert not tone.regressed and tone.delta == pytest.approx(0.0)
    assert not c.regressions  # no single test dropped beyond 0.1
    assert c.verdict == "regressed" and c.gate_failed
    assert c.reason == "metric 'accuracy' dropped 0.90 → 0.85 (-0.05, max drop 0.02)"


@pytest.mark.parametrize(("margin", "regressed"), [(0.25, False), (0.2499, True)])
def test_a_drop_exactly_at_the_margin_is_tolerated(margin: float, regressed: bool) -> None:
    base = [row(n, 0.75, "pass", metrics={"m": 0.75}) for n in "ab"]
    head = [row(n, 0.5, "pass", metrics={"m": 0.5}) for n in "ab"]
    c = judge(base, head, max_metric_drop=margin, max_score_drop=margin)
    assert [t.regressed for t in c.tests] == [regressed, regressed]
    assert (c.mean_score.regressed, c.metrics[0].regressed) == (regressed, regressed)
    assert c.mean_score.method == "exact" and c.mean_score.delta == pytest.approx(-0.25)
    assert (c.verdict, c.gate_failed) == (("regressed", True) if regressed else ("passed", False))
    assert not c.mean_score.inconclusive and not c.metrics[0].inconclusive


def test_small_metric_drop_within_tolerance_passes() -> None:
    c = judge([row("a", 1.0, metrics={"accuracy": 0.9})], [row("a", 1.0, metrics={"accuracy": 0.89})])
    assert c.verdict == "passed" and not c.metrics[0].regressed


def test_overall_mean_drop_regresses_even_when_each_test_is_within_tolerance() -> None:
    base = [row(n, 0.9) for n in "abcd"]
    head = [row(n, 0.85) for n in "abcd"]
    c = judge(base, head)
    assert not any(t.regressed for t in c.tests)
    assert c.mean_score.regressed and c.mean_score.delta == pytest.approx(-0.05)
    assert c.verdict == "regressed" and c.gate_failed
    assert "mean score dropped 0.90 → 0.85" in c.reason


def test_new_failure_and_fix() -> None:
    c = judge([row("a", 1.0), row("b", 0.0)], [row("a", 0.0), row("b", 1.0)], max_metric_drop=1.0)
    a, b = by_name(c, "a"), by_name(c, "b")
    assert a.new_failure and a.regressed and not a.fixed
    assert b.fixed and not b.new_failure
    assert c.new_failures == [a] and c.fixes == [b]
    # with a baseline, a test that newly fails is a regression (not a plain failure)
    assert c.verdict == "regressed" and c.gate_failed
    assert c.gate_notes()[a.test_id].text == "score 1.00 -> 0.00 (-1.00); newly failing (passed in the baseline)"


def test_new_failure_with_a_small_drop_is_still_a_regression_when_a_pass_rate_is_allowed() -> None:
    # The score crosses the test's threshold with a drop inside the tolerance.
    c = judge([row("a", 0.55, "pass"), row("b", 1.0)], [row("a", 0.5, "fail"), row("b", 1.0)], min_pass_rate=0.5, max_metric_drop=1.0)
    a = by_name(c, "a")
    assert a.new_failure and not a.regressed
    assert c.verdict == "regressed" and c.gate_failed
    assert c.reason == "1 test newly failing"
    assert {k: n.text for k, n in c.gate_notes().items()} == {a.test_id: "score 0.55 -> 0.50 (-0.05); newly failing (passed in the baseline)"}


def test_added_and_removed_tests_are_reported_not_regressions() -> None:
    c = judge([row("kept", 1.0), row("gone", 1.0)], [row("kept", 1.0), row("fresh", 0.9)])
    assert [t.name for t in c.changed("added")] == ["fresh"]
    assert [t.name for t in c.changed("removed")] == ["gone"]
    assert c.verdict == "passed" and not c.gate_failed
    assert c.mean_score.tests == 1  # only tests present in both runs are averaged
    assert c.pass_rate_base is not None and c.pass_rate_base.total == 2


def test_a_failing_added_test_is_a_failure_not_a_regression() -> None:
    c = judge([row("kept", 1.0)], [row("kept", 1.0), row("fresh", 0.0)])
    fresh = by_name(c, "fresh")
    assert fresh.change == "added" and not fresh.regressed and not fresh.new_failure
    assert c.failures == [fresh] and c.regressions == []
    assert c.verdict == "failed" and c.reason == "1 test failed"


def test_a_removed_test_keeps_its_baseline_name_status_and_score() -> None:
    c = judge([row("kept", 1.0), row("gone", 0.0, metrics={"m": 0.5})], [row("kept", 1.0)])
    (gone,) = c.changed("removed")
    assert (gone.name, gone.base_name, gone.base_status, gone.base_score, gone.head_score) == ("gone", "gone", "fail", 0.0, None)
    assert (gone.prompt_label, gone.provider) == ("prompt", "bot") and not gone.regressed


def test_gate_notes_name_known_failures_and_flips_without_evidence() -> None:
    base = [row("known", 0.0), row("flaky", 1.0, sampled=True), row("fine", 1.0)]
    head = [row("known", 0.0), row("flaky", 0.0, sampled=True), row("fine", 1.0)]
    c = judge(base, head, max_metric_drop=1.0)
    known, flaky = by_name(c, "known"), by_name(c, "flaky")
    assert c.gate_notes() == {
        known.test_id: GateNote(kind="known failure", text="failing in the baseline too; does not fail the gate"),
        flaky.test_id: GateNote(kind="not significant", text="newly failing, not significant (sampled, no repeats to judge it by); does not fail the gate"),
    }
    repeated = judge(sampled("flaky", "PPP"), sampled("flaky", "PFF"), max_metric_drop=1.0)
    (note,) = repeated.gate_notes().values()
    assert note.text == "newly failing, not significant (sampled, p=0.2); does not fail the gate"  # Fisher: 3/3 -> 1/3
    assert judge(base, head, max_metric_drop=1.0, fail_on="failures").gate_notes() == {}


def test_a_significant_drop_within_the_margin_is_not_a_regression() -> None:
    base, head = sampled("a", "P" * 20), sampled("a", "P" * 15 + "F" * 5)
    within = by_name(judge(base, head, max_score_drop=0.3, max_metric_drop=1.0), "a")
    assert within.p_value is not None and within.p_value < 0.05 and within.significant
    assert not within.regressed and not within.inconclusive
    beyond = by_name(judge(base, head, max_score_drop=0.2, max_metric_drop=1.0), "a")
    assert beyond.significant and beyond.regressed


def test_renamed_test_matched_by_fingerprint() -> None:
    base = [row("old name", 1.0, fingerprint="same vars"), row("other", 1.0)]
    head = [row("new name", 0.2, fingerprint="same vars"), row("other", 1.0)]
    c = judge(base, head, min_pass_rate=0.5)
    renamed = c.changed("renamed")
    assert [(t.name, t.base_name) for t in renamed] == [("new name", "old name")]
    assert renamed[0].base_score == 1.0 and renamed[0].head_score == 0.2
    assert renamed[0].regressed and renamed[0].new_failure  # judged against the test it was: a new name hides nothing
    assert c.changed("added") == [] and c.changed("removed") == []
    assert c.verdict == "regressed" and [t.name for t in c.regressions] == ["new name"]
    from ci_grade.report.gate_summary import terminal_summary

    lines = terminal_summary(c).splitlines()
    listed = lines.index("  renamed (1):")  # the terminal lists it under its own heading, with its old name
    assert lines[listed + 1] == "    - [bot | prompt] new name: was old name"


def test_promptfoos_name_for_an_openai_chat_provider_matches() -> None:
    # promptfoo's results call `openai:chat:gpt-4o` `openai:gpt-4o`; its rows carry no ci-grade ids
    base = [row("greets", 1.0, provider="openai:gpt-4o", test_id="from-promptfoo", fingerprint="promptfoo's")]
    head = [row("greets", 0.0, provider="openai:chat:gpt-4o", fingerprint="ci-grade's")]
    c = judge(base, head)
    assert c.changed("added") == [] and c.changed("removed") == []
    assert [t.name for t in c.regressions] == ["greets"]


def test_ambiguous_fingerprints_are_added_and_removed() -> None:
    base = [row("x1", 1.0, fingerprint="fp"), row("x2", 1.0, fingerprint="fp"), row("kept", 1.0)]
    head = [row("y1", 1.0, fingerprint="fp"), row("kept", 1.0)]
    c = judge(base, head)
    assert c.changed("renamed") == []
    assert len(c.changed("removed")) == 2 and len(c.changed("added")) == 1


def test_errors_are_errors_not_regressions() -> None:
    c = judge([row("a", 1.0), row("b", 1.0)], [row("a", 0.0, "error", error="grader unreachable"), row("b", 1.0)])
    a = by_name(c, "a")
    assert a.head_status == "error" and a.error == "grader unreachable"
    assert not a.regressed and not a.new_failure and a.delta is None
    assert c.regressions == [] and c.errors == [a] and c.error_rows == 1
    assert c.mean_score.tests == 1 and c.mean_score.delta == pytest.approx(0.0)
    assert c.verdict == "failed" and c.reason == "1 error (max 0)"


def test_max_errors_tolerates_errors() -> None:
    c = judge([row("a", 1.0), row("b", 1.0)], [row("a", 0.0, "error"), row("b", 1.0)], max_errors=1)
    assert c.verdict == "passed" and not c.gate_failed
    assert c.reason == "1 of 2 tests passed; 1 error tolerated (max 1); no regressions against the baseline"
    over = judge([row("a", 1.0), row("b", 1.0)], [row("a", 0.0, "error"), row("b", 0.0, "error")], max_errors=1)
    assert over.verdict == "failed" and over.reason == "2 errors (max 1)"


def test_min_pass_rate_replaces_every_test_passing() -> None:
    base = [row(n, 0.0) for n in "ab"] + [row(n, 1.0) for n in "cdefghij"]
    head = list(base)
    ok = judge(base, head, min_pass_rate=0.8)
    assert ok.verdict == "passed" and not ok.gate_failed
    assert ok.reason == "8 of 10 tests passed (pass rate 80.0%, minimum 80.0%); no regressions against the baseline"
    low = judge(base, head, min_pass_rate=0.9)
    assert low.verdict == "failed" and low.gate_failed
    assert low.reason == "pass rate 80.0% below the minimum 90.0%"


def test_missing_baseline_judges_thresholds_only() -> None:
    run = run_of(row("a", 0.2), row("b", 1.0, metrics={"accuracy": 1.0}))
    c = compare(run, None, GatePolicy())
    assert not c.has_baseline and c.base_info is None and c.pass_rate_base is None
    assert [t.change for t in c.tests] == ["same", "same"]
    assert c.regressions == [] and c.changed("added") == []
    assert c.mean_score.head == pytest.approx(0.6) and c.mean_score.delta is None
    assert (c.verdict, c.reason, c.gate_failed) == ("failed", "1 test failed", True)
    passing = compare(run_of(row("b", 1.0)), None, GatePolicy())
    assert passing.reason == "all 1 test passed; no baseline, thresholds only"


def test_no_tests_is_a_failure() -> None:
    c = compare(run_of(), None, GatePolicy())
    assert c.verdict == "failed" and c.reason == "no tests ran"


def repeats(name: str, scores: list[float]) -> list:
    """Passing repeats of one test (scores under a threshold-free test's 1.0)."""
    return [row(name, s, "pass", repeat=i) for i, s in enumerate(scores)]


def sampled(name: str, outcomes: str, **kwargs: object) -> list:
    """Repeats of a sampled test: "PPF" = pass, pass, fail (score 1 or 0)."""
    return [row(name, 1.0 if o == "P" else 0.0, sampled=True, repeat=i, **kwargs) for i, o in enumerate(outcomes)]  # type: ignore[arg-type]


def test_a_sampled_test_failing_every_repeat_is_a_significant_regression() -> None:
    c = judge(sampled("a", "PPPP") + sampled("b", "PPPP"), sampled("a", "FFFF") + sampled("b", "PPPP"), max_metric_drop=1.0)
    a = by_name(c, "a")
    assert not a.reproducible and a.new_failure
    assert a.p_value == pytest.approx(1 / 70)  # Fisher: 4/4 -> 0/4
    assert a.significant and a.regressed and c.regressions == [a]
    assert (c.verdict, c.gate_failed) == ("regressed", True)


def test_a_sampled_flip_without_evidence_is_listed_not_gating() -> None:
    c = judge([row("a", 1.0, sampled=True), row("b", 1.0, sampled=True)], [row("a", 0.0, sampled=True), row("b", 1.0, sampled=True)], max_metric_drop=1.0)
    a = by_name(c, "a")
    assert a.new_failure and a.p_value is None and not a.evident and a.inconclusive
    assert c.flaky_flips == [a] and c.regressions == []
    assert (c.verdict, c.gate_failed) == ("passed", False)
    assert "1 sampled test newly failing, not significant" in c.reason
    from ci_grade.report.gate_summary import terminal_summary

    lines = terminal_summary(c).splitlines()  # the terminal lists it, as the comment does
    assert "90% CI [-1.00, +1.00])" in lines[1]  # a share moves by 100 points at most (the t interval of 2 tests is wider)
    assert ": no significant change (McNemar mid-p, p=" in lines[1]
    assert lines[lines.index("  newly failing, not significant (sampled) (1):") + 1].startswith("    - [bot | prompt] a: score 1.00 -> 0.00")


def test_a_noisy_flip_over_repeats_is_not_significant() -> None:
    c = judge(sampled("a", "PPPF"), sampled("a", "PPFF"), max_metric_drop=1.0)
    a = by_name(c, "a")
    assert a.new_failure and a.p_value is not None and a.p_value > 0.4
    assert not a.significant and not a.regressed and a.inconclusive
    assert c.verdict == "passed"
    assert a.base_interval is not None and a.base_interval[0] < 0.75 < a.base_interval[1]


def test_metric_drop_of_sampled_tests_within_noise_is_inconclusive() -> None:
    base = [row(n, 1.0, sampled=True, metrics={"m": v}) for n, v in zip("abcdefgh", [1, 0, 1, 1, 0, 1, 1, 0], strict=True)]
    head = [row(n, 1.0, sampled=True, metrics={"m": v}) for n, v in zip("abcdefgh", [1, 0, 0, 1, 0, 1, 0, 0], strict=True)]
    c = judge(base, head)
    m = c.metrics[0]
    assert m.delta == pytest.approx(-0.25) and m.method == "paired t"
    assert m.inconclusive and not m.regressed and not m.significant
    assert m.mde is not None and m.mde > 0.25 and m.tests_needed is not None and m.tests_needed > 8
    assert c.verdict == "passed"


def test_repeats_pass_by_majority_and_errored_repeats_are_not_scored() -> None:
    head = [row("a", 1.0, repeat=0), row("a", 0.0, repeat=1), row("a", 1.0, repeat=2), row("a", 0.0, "error", repeat=3)]
    c = compare(run_of(*head), None, GatePolicy(max_errors=1))
    a = by_name(c, "a")
    assert a.head_status == "pass" and a.head_repeats == 3 and a.head_errors == 1
    assert a.head_score == pytest.approx(2 / 3)
    assert c.error_rows == 1 and c.verdict == "passed"
    tie = compare(run_of(row("b", 1.0, repeat=0), row("b", 0.0, repeat=1)), None, GatePolicy())
    assert tie.tests[0].head_status == "fail"


@pytest.mark.parametrize(
    ("fail_on", "failing_gate", "regressed_gate", "failing_verdict"),
    [("regressions", True, True, "regressed"), ("failures", True, False, "failed"), ("never", False, False, "regressed")],
)
def test_fail_on_modes(fail_on: str, failing_gate: bool, regressed_gate: bool, failing_verdict: str) -> None:
    failing = judge([row("a", 1.0)], [row("a", 0.0)], fail_on=fail_on)
    assert failing.verdict == failing_verdict and failing.gate_failed is failing_gate
    regressed = judge([row("a", 0.9)], [row("a", 0.6)], fail_on=fail_on, max_metric_drop=1.0)
    assert regressed.verdict == "regressed" and regressed.gate_failed is regressed_gate
    errored = judge([row("a", 1.0)], [row("a", 0.0, "error")], fail_on=fail_on)
    assert errored.verdict == "failed" and errored.gate_failed is failing_gate
    if not regressed_gate:
        assert regressed.reason.endswith(f"(fail-on {fail_on}: reported, not gating)")


def test_fail_on_failures_says_which_problems_do_not_gate() -> None:
    c = judge([row("a", 0.9), row("b", 1.0)], [row("a", 0.6), row("b", 0.0)], fail_on="failures", max_metric_drop=1.0)
    assert c.gate_failed and c.verdict == "failed"
    assert c.reason.startswith("1 test failed; ")
    assert c.reason.endswith("(fail-on failures: regressions reported, not gating)")


def test_assertion_deltas_carry_the_graders_reason() -> None:
    base_assertions = [AssertionResult(type="contains", status="pass", score=1.0), AssertionResult(type="llm-rubric", metric="tone", status="pass", score=0.9)]
    head_assertions = [AssertionResult(type="contains", status="pass", score=1.0), AssertionResult(type="llm-rubric", metric="tone", status="fail", score=0.2, reason="rude reply")]
    c = judge([row("a", 0.95, assertions=base_assertions)], [row("a", 0.6, "fail", assertions=head_assertions)])
    deltas = by_name(c, "a").assertions
    assert [(d.type, d.metric, d.base, d.head, d.head_passed, d.reason) for d in deltas] == [
        ("contains", None, 1.0, 1.0, True, ""),
        ("llm-rubric", "tone", 0.9, 0.2, False, "rude reply"),
    ]
    assert deltas[1].delta == pytest.approx(-0.7)


def test_confirmation_reruns_are_the_evidence_for_the_tests_they_rerun() -> None:
    base = baseline_from_runs([run_of(*sampled("a", "P"), *sampled("b", "P"), *sampled("c", "P")) for _ in range(4)])
    head = run_of(*sampled("a", "F"), *sampled("b", "F"), *sampled("c", "P"))
    head.confirmations = [*sampled("a", "FFFF"), *sampled("b", "PPF"), row("b", 0.0, "error", sampled=True, repeat=3, error="timeout")]
    c = compare(head, base, GatePolicy(max_metric_drop=1.0))
    a, b, untouched = by_name(c, "a"), by_name(c, "b"), by_name(c, "c")
    assert a.confirmation is not None and (a.confirmation.runs, a.confirmation.passes, a.confirmation.verdict) == (4, 0, "confirmed")
    assert a.confirmation.p_value == pytest.approx(1 / 70) and a.p_value == pytest.approx(1 / 70)  # Fisher: 4/4 -> 0/4
    assert a.significant and a.regressed and not a.inconclusive
    assert b.confirmation is not None and (b.confirmation.runs, b.confirmation.passes, b.confirmation.verdict) == (3, 2, "flaky")
    assert b.p_value == pytest.approx(3 / 7) and not b.significant and not b.regressed and b.inconclusive
    assert untouched.confirmation is None and not untouched.regressed
    assert c.regressions == [a]
    # the suite measures use the run's own rows only: two of three tests newly failing, whatever the reruns said
    assert c.mean_score.head == pytest.approx(1 / 3) and c.mean_score.base == pytest.approx(1.0)


def test_an_empty_confirmation_is_no_evidence() -> None:
    base = baseline_from_runs([run_of(*sampled("a", "P")) for _ in range(2)])
    head = run_of(*sampled("a", "F"))
    head.confirmations = [row("a", 0.0, "error", sampled=True, error="timeout")]
    a = by_name(compare(head, base, GatePolicy(max_metric_drop=1.0)), "a")
    assert a.confirmation is not None and (a.confirmation.runs, a.confirmation.passes, a.confirmation.p_value) == (0, 0, 1.0)
    assert a.p_value is None and not a.regressed and a.inconclusive


def test_grader_change_is_warned() -> None:
    base = run_of(row("a", 1.0), graders=["openai:gpt-4.1"], grader_templates={"llm-rubric": "aaa"})
    head = run_of(row("a", 1.0), graders=["openai:gpt-5"], grader_templates={"llm-rubric": "bbb"})
    c = compare(head, baseline_from_run(base), GatePolicy())
    assert c.warnings == [
        "graders differ from the baseline's (openai:gpt-4.1 → openai:gpt-5): score changes may come from the grader",
        "grader templates changed since the baseline: llm-rubric",
    ]


def test_grader_change_is_warned_whichever_grader_changed() -> None:
    def warnings(base_graders: list[str], head_graders: list[str], base_templates: dict[str, str], head_templates: dict[str, str]) -> list[str]:
        base = run_of(row("a", 1.0), graders=base_graders, grader_templates=base_templates)
        head = run_of(row("a", 1.0), graders=head_graders, grader_templates=head_templates)
        return compare(head, baseline_from_run(base), GatePolicy()).warnings

    same = {"llm-rubric": "aaa", "factuality": "fff"}
    assert warnings(["openai:gpt-4.1", "anthropic:claude"], ["openai:gpt-4.1", "anthropic:claude-2"], same, same) == [
        "graders differ from the baseline's (openai:gpt-4.1, anthropic:claude → openai:gpt-4.1, anthropic:claude-2): score changes may come from the grader",
    ]
    assert warnings(["b:x", "a:y"], ["a:y", "b:x"], same, same) == []  # the same graders, listed in another order
    assert warnings([], ["a:y"], same, same) == []  # a baseline that recorded no graders cannot tell
    assert warnings(["a:y"], ["a:y"], same, {"llm-rubric": "aaa", "factuality": "ggg", "g-eval": "new"}) == [
        "grader templates changed since the baseline: factuality",  # a template the baseline never used is not a change
    ]


def test_comparison_serialises_with_deltas() -> None:
    c = judge([row("a", 0.9)], [row("a", 0.6)])
    data = c.model_dump(mode="json")
    assert data["tests"][0]["delta"] == pytest.approx(-0.3)
    assert data["mean_score"]["delta"] == pytest.approx(-0.3)
    assert Comparison.model_validate(data).tests[0].regressed


def test_many_metric_drops_are_summarised_in_one_line() -> None:
    names = ["alpha", "beta", "gamma", "delta"]
    c = judge([row("a", 1.0, metrics=dict.fromkeys(names, 1.0))], [row("a", 1.0, metrics=dict(zip(names, (0.5, 0.4, 0.3, 0.2), strict=True)))])
    assert [m.name for m in c.metrics if m.regressed] == sorted(names)
    assert c.reason == "4 metrics dropped beyond tolerance (max drop 0.02): 'alpha', 'beta', 'delta' and 1 more"


def test_tests_without_a_fingerprint_are_never_taken_for_renames() -> None:
    head = run_of(row("kept", 1.0), row("new name", 1.0))
    baseline = baseline_from_run(run_of(row("kept", 1.0), row("old name", 1.0)))
    for test in [*baseline.tests.values(), *head.results]:
        test.fingerprint = ""  # e.g. results written by a tool that records none
    c = compare(head, baseline, GatePolicy())
    assert c.changed("renamed") == []
    assert [t.name for t in c.changed("added")] == ["new name"] and [t.name for t in c.changed("removed")] == ["old name"]


def test_without_a_baseline_the_terminal_says_the_gate_judged_thresholds_only() -> None:
    from ci_grade.report.gate_summary import terminal_summary

    c = compare(run_of(row("a", 1.0), row("b", 0.0)), None, GatePolicy())
    assert "  no baseline: the gate judged thresholds only" in terminal_summary(c).splitlines()
