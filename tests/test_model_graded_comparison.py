"""select-best and max-score: comparisons across all outputs (prompts x providers) of one test row."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_grade.grading.model_graded.comparison import aggregate_row
from ci_grade.results.models import AssertionResult
from tests.conftest import write
from tests.model_graded_helpers import all_text, fenced_blocks, grader_calls, run_eval, status
from tests.servers.llm_server import LLMServer

TWO_PROMPTS = """
prompts:
  - 'Write a tweet about {{topic}}'
  - 'Write a very concise, funny tweet about {{topic}}'
providers: [echo]
tests:
  - vars: {topic: bananas}
    assert:
      - type: select-best
        value: choose the funniest tweet
"""


def select_results(result) -> list[dict]:
    return [next(c for c in row["gradingResult"]["componentResults"] if c["assertion"]["type"].endswith("select-best")) for row in result.rows]


def test_winner_passes_loser_fails_and_usage_is_counted_once(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("choose the funniest tweet", {"reason": "The second is funnier.", "best": 1}, usage={"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100})
    result = run_eval(tmp_path, TWO_PROMPTS)
    loser_row, winner_row = result.rows
    loser, winner = select_results(result)
    assert (winner["pass"], winner["score"]) == (True, 1.0) and winner["reason"] == "Output selected as the best: choose the funniest tweet"
    assert (loser["pass"], loser["score"]) == (False, 0.0) and loser["reason"].startswith("Output not selected")
    assert winner_row["success"] is True and loser_row["success"] is False and loser_row["score"] == 0
    assert loser_row["failureReason"] == 1
    assert (loser["tokensUsed"]["total"], winner["tokensUsed"]["total"]) == (100, 0)
    assert result.stats["tokenUsage"]["assertions"]["total"] == 100
    assert result.stats["tokenUsage"]["assertions"]["numRequests"] == 1
    (body,) = grader_calls(openai_env)
    blocks = fenced_blocks(all_text(body))
    assert [content for _, content in blocks] == ["Write a tweet about bananas", "Write a very concise, funny tweet about bananas"]
    assert all_text(body).index("Output 0:") < all_text(body).index("Output 1:")
    assert body["response_format"] == {"type": "json_object"}


def test_across_two_providers_and_merged_with_other_assertions(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("most facts", "0")
    result = run_eval(
        tmp_path,
        """
prompts: ['Tell me about {{topic}}']
providers:
  - {id: echo, label: alpha, transform: '"NYC has 8 million people and five boroughs."'}
  - {id: echo, label: beta, transform: '"NYC is big."'}
tests:
  - vars: {topic: nyc}
    assert:
      - {type: contains, value: NYC}
      - {type: select-best, value: choose the tweet that contains the most facts}
""",
    )
    alpha, beta = result.rows
    assert alpha["provider"]["label"] == "alpha" and alpha["success"] is True
    assert beta["success"] is False and beta["score"] == 0
    assert [c["assertion"]["type"] for c in beta["gradingResult"]["componentResults"]] == ["contains", "select-best"]
    assert beta["gradingResult"]["componentResults"][0]["pass"] is True


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("5", "chose output 5, but there are outputs 0..1"),
        ("I like 0 or maybe 1", "holds no output index"),
        ("0\nActually:\n1", "several outputs"),
        ('{"reason": "r", "best": 0}\nFinal answer: 1', "elsewhere"),
        ('{"reason": "r", "best": "first"}', "not an output index"),
        ("Both are funny.", "holds no output index"),
    ],
)
def test_ambiguous_or_invalid_index_is_an_error_for_every_output(tmp_path: Path, openai_env: LLMServer, reply: str, message: str) -> None:
    openai_env.on_chat("choose the funniest tweet", reply)
    result = run_eval(tmp_path, TWO_PROMPTS)
    for component in select_results(result):
        assert status(component) == "error" and message in component["reason"], component["reason"]
    assert [row["failureReason"] for row in result.rows] == [2, 2]
    assert [(row["score"], row["gradingResult"]["score"]) for row in result.rows] == [(0, 0), (0, 0)]  # an ERROR row scores 0
    assert result.stats["tokenUsage"]["assertions"]["numRequests"] == 1


@pytest.mark.parametrize(
    ("reply", "winner"),
    [
        ("1", 1),
        ("1.0", 1),  # a bare number, as promptfoo reads it
        ("**0**", 0),
        ("Comparing both.\nBest: 1", 1),
        ('```json\n{"best": 0, "reason": "r"}\n```', 0),
        # The forms promptfoo's docs promise for a custom select-best prompt.
        ("Output 1 is best", 1),
        ("The best is 1", 1),
        ("Both are fine, but the second is funnier.\nThe best is output 1.", 1),
        ("Output 0 is the best one.", 0),
    ],
)
def test_accepted_index_forms(tmp_path: Path, openai_env: LLMServer, reply: str, winner: int) -> None:
    openai_env.on_chat("choose the funniest tweet", reply)
    result = run_eval(tmp_path, TWO_PROMPTS)
    assert [c["pass"] for c in select_results(result)] == [i == winner for i in range(2)]


def test_fewer_than_two_outputs_and_not_are_errors(tmp_path: Path, openai_env: LLMServer) -> None:
    result = run_eval(
        tmp_path,
        """
prompts: ['Write a tweet about {{topic}}']
providers: [echo]
tests:
  - vars: {topic: bananas}
    assert:
      - {type: select-best, value: choose the funniest tweet}
""",
    )
    (component,) = select_results(result)
    assert status(component) == "error" and "needs at least two outputs" in component["reason"]
    inverted = run_eval(tmp_path, TWO_PROMPTS.replace("type: select-best", "type: not-select-best"))
    for component in select_results(inverted):
        assert status(component) == "error" and "cannot be inverted" in component["reason"]
    assert grader_calls(openai_env) == []


def test_rubric_prompt_variables(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("PICK", "1")
    result = run_eval(
        tmp_path,
        TWO_PROMPTS.replace(
            "value: choose the funniest tweet",
            "value: choose the funniest tweet\n        rubricPrompt: 'PICK {{criteria}} for {{topic}}:{% for o in outputs %} [{{loop.index0}}] {{o}}{% endfor %}'",
        ),
    )
    assert [c["pass"] for c in select_results(result)] == [False, True]
    (body,) = grader_calls(openai_env)
    assert body["messages"] == [
        {
            "role": "user",
            "content": "PICK choose the funniest tweet for bananas: [0] Write a tweet about bananas [1] Write a very concise, funny tweet about bananas",
        }
    ]


def test_grader_failure_is_an_error_for_every_output(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.fail(500, times=20, path="/v1/chat/completions")
    result = run_eval(tmp_path, TWO_PROMPTS)
    for component in select_results(result):
        assert status(component) == "error" and "500" in component["reason"]


def test_an_output_that_could_not_be_produced_leaves_no_winner_among_the_rest(tmp_path: Path, openai_env: LLMServer) -> None:
    # The third output errored: not being chosen among two still means not the best of three,
    # but being chosen among two is no evidence of being the best of three.
    write(tmp_path / "flaky.py", "def call_api(prompt, options, context):\n    if 'C' in prompt:\n        return {'error': 'the service fell over'}\n    return {'output': prompt}\n")
    openai_env.on_chat("choose the clearest", {"reason": "B reads best", "best": 1})
    result = run_eval(tmp_path, """
prompts: ['A {{t}}', 'B {{t}}', 'C {{t}}']
providers: ['file://flaky.py']
tests:
  - vars: {t: tea}
    assert: [{type: select-best, value: choose the clearest}]
""")
    a, b, c = select_results(result)
    assert (a["pass"], status(a)) == (False, "fail")
    assert status(b) == "error" and b["reason"].startswith("chosen among 2 of 3 outputs: the others could not be produced")
    assert status(c) == "error"
    assert [row["success"] for row in result.rows] == [False, False, False] and result.rows[1]["failureReason"] == 2


MAX_SCORE = """
prompts: ['alpha beta', 'alpha', 'gamma']
providers: [echo]
tests:
  - vars: {{}}
    assert:
      - {{type: contains, value: alpha}}
      - {{type: icontains, value: BETA}}
      - {{type: icontains, value: GAMMA}}
      - type: max-score
{value}"""


def max_results(result) -> list[dict]:
    return [row["gradingResult"]["componentResults"][-1] for row in result.rows]


def test_max_score_average_picks_the_highest_without_a_grader(tmp_path: Path, openai_env: LLMServer) -> None:
    result = run_eval(tmp_path, MAX_SCORE.format(value=""))
    scores = [c["metadata"]["maxScore"] for c in max_results(result)]
    assert scores == pytest.approx([2 / 3, 1 / 3, 1 / 3])
    assert [c["pass"] for c in max_results(result)] == [True, False, False]
    assert max_results(result)[0]["reason"] == "Selected as highest scoring output (score: 0.667)"
    assert max_results(result)[1]["reason"] == "Not selected (score: 0.333, max: 0.667)"
    assert [row["score"] for row in result.rows][1:] == [0, 0]
    assert result.rows[0]["namedScores"]["maxScore"] == pytest.approx(2 / 3)
    assert openai_env.requests == []


def test_max_score_sum_and_weights(tmp_path: Path, openai_env: LLMServer) -> None:
    weighted = run_eval(tmp_path, MAX_SCORE.format(value="        value: {method: sum, weights: {icontains: 5}}\n"))
    assert [c["metadata"]["maxScore"] for c in max_results(weighted)] == pytest.approx([6, 1, 5])
    assert [c["pass"] for c in max_results(weighted)] == [True, False, False]
    gamma = run_eval(tmp_path, MAX_SCORE.format(value="        value: {weights: {contains: 0}}\n"))
    assert [c["metadata"]["maxScore"] for c in max_results(gamma)] == pytest.approx([0.5, 0, 0.5])
    assert [c["pass"] for c in max_results(gamma)] == [True, False, False]  # a tie goes to the first output


@pytest.mark.parametrize(("threshold", "passed"), [("0.6666", True), ("0.7", False)])
def test_max_score_threshold(tmp_path: Path, openai_env: LLMServer, threshold: str, passed: bool) -> None:
    result = run_eval(tmp_path, MAX_SCORE.format(value=f"        value: {{method: average, threshold: {threshold}}}\n"))
    winner = max_results(result)[0]
    assert winner["pass"] is passed
    if not passed:
        assert winner["reason"] == f"Not selected - score 0.667 below threshold {threshold}"
        assert result.rows[0]["success"] is False
    assert [c["pass"] for c in max_results(result)][1:] == [False, False]


def test_max_score_needs_other_assertions_and_a_valid_value(tmp_path: Path, openai_env: LLMServer) -> None:
    alone = run_eval(
        tmp_path,
        """
prompts: [a, b]
providers: [echo]
tests:
  - assert: [{type: max-score}]
""",
    )
    for component in max_results(alone):
        assert status(component) == "error" and "at least one other assertion" in component["reason"]
    bad = run_eval(tmp_path, MAX_SCORE.format(value="        value: {method: median}\n"))
    assert len(max_results(bad)) == len(bad.rows) == 3
    assert all(status(c) == "error" and "'average' or 'sum'" in c["reason"] for c in max_results(bad))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("value: [average]", "max-score's value must be a mapping {method, weights, threshold} (or empty)"),
        ("value: {method: sum, top: 2}", "max-score's value has unknown keys ['top']; use method, weights, threshold"),
        ("value: {weights: {contains: heavy}}", "max-score's weights must map assertion types to numbers"),
        ("value: {weights: [contains]}", "max-score's weights must map assertion types to numbers"),
        ("value: {threshold: high}", "max-score's threshold must be a number, got 'high'"),
    ],
)
def test_max_score_refuses_a_bad_value(tmp_path: Path, openai_env: LLMServer, value: str, message: str) -> None:
    result = run_eval(tmp_path, MAX_SCORE.format(value=f"        {value}\n"))
    assert len(max_results(result)) == 3
    for component in max_results(result):
        assert status(component) == "error" and component["reason"] == message


def test_max_score_reads_numbers_written_as_text(tmp_path: Path, openai_env: LLMServer) -> None:
    result = run_eval(tmp_path, MAX_SCORE.format(value="        value: {method: sum, weights: {icontains: '5'}, threshold: '6'}\n"))
    assert [c["metadata"]["maxScore"] for c in max_results(result)] == pytest.approx([6, 1, 5])
    assert [c["pass"] for c in max_results(result)] == [True, False, False]


def test_aggregate_row_leaves_comparisons_out_and_weighs_by_type() -> None:
    parts = [
        AssertionResult(type="contains", status="pass", score=1.0),
        AssertionResult(type="icontains", status="fail", score=0.0),
        AssertionResult(type="not-select-best", status="pass", score=1.0),
        AssertionResult(type="max-score", status="pass", score=1.0),
        AssertionResult(type="llm-rubric", status="pass", score=0.5),
    ]
    assert aggregate_row(parts, "average", {}) == (pytest.approx(0.5), 3, 3.0)
    assert aggregate_row(parts, "average", {"icontains": 2.0, "llm-rubric": 0.0}) == (pytest.approx(1 / 3), 3, 3.0)
    assert aggregate_row(parts, "sum", {"contains": 3.0}) == (pytest.approx(3.5), 3, 5.0)
    assert aggregate_row(parts, "average", {"contains": 0.0, "icontains": 0.0, "llm-rubric": 0.0}) == (0.0, 3, 0.0)
    assert aggregate_row([], "sum", {}) == (0, 0, 0)


def test_max_score_with_model_graded_components(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("alpha beta", {"reason": "good", "pass": True, "score": 0.9})
    openai_env.on_chat("<output", {"reason": "weak", "pass": True, "score": 0.2})
    result = run_eval(
        tmp_path,
        """
prompts: ['alpha beta', 'gamma']
providers: [echo]
tests:
  - assert:
      - {type: llm-rubric, value: is good}
      - {type: max-score}
""",
    )
    assert [c["metadata"]["maxScore"] for c in max_results(result)] == pytest.approx([0.9, 0.2])
    assert [row["success"] for row in result.rows] == [True, False]


def test_max_score_skips_outputs_whose_assertions_errored(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("alpha beta", "not a verdict")
    openai_env.on_chat("<output", {"reason": "fine", "pass": True, "score": 0.4})
    result = run_eval(
        tmp_path,
        """
prompts: ['alpha beta', 'gamma', 'delta']
providers: [echo]
tests:
  - assert:
      - {type: llm-rubric, value: is good}
      - {type: max-score}
""",
    )
    broken, gamma, delta = max_results(result)
    assert status(broken) == "error" and "llm-rubric could not be graded" in broken["reason"]
    assert result.rows[0]["failureReason"] == 2
    assert (gamma["pass"], delta["pass"]) == (True, False)  # equal scores: the first remaining output wins


def test_not_max_score_is_an_error(tmp_path: Path, openai_env: LLMServer) -> None:
    result = run_eval(tmp_path, MAX_SCORE.format(value="").replace("type: max-score", "type: not-max-score"))
    assert len(max_results(result)) == len(result.rows) > 0
    assert all(status(c) == "error" and "cannot be inverted" in c["reason"] for c in max_results(result))
