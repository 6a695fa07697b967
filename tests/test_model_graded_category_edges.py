"""Reply readers of the model-graded types at their edges: factuality's category must be exactly
one letter A-E (in optional parentheses) and a reply naming none says which forms are accepted;
closedqa, context-relevance, conversation-relevance, g-eval and context-faithfulness replies, and
similarity's overflow check, name what was wrong."""

from __future__ import annotations

import pytest

from ci_grade.errors import InputRejected, VerdictError, VerdictProblem
from ci_grade.grading.model_graded.closedqa import parse_closedqa
from ci_grade.grading.model_graded.context_faithfulness import parse_verdicts
from ci_grade.grading.model_graded.context_relevance import extracts
from ci_grade.grading.model_graded.conversation import parse_window
from ci_grade.grading.model_graded.factuality import parse_category
from ci_grade.grading.model_graded.geval import parse_evaluation, parse_steps
from ci_grade.grading.model_graded.similarity import cosine


@pytest.mark.parametrize("category", ["A", "(b)", " ( C ) ", "e"])
def test_one_letter_in_optional_parentheses_is_a_category(category: str) -> None:
    letter, reason = parse_category({"category": category, "reason": " same facts "})
    assert letter == category.strip(" ()").upper() and reason == "same facts"


@pytest.mark.parametrize("category", ["AX", "X", "(A)X", "XB", "AB", ""])
def test_anything_more_than_one_letter_is_invalid(category: str) -> None:
    with pytest.raises(VerdictError) as info:
        parse_category({"category": category, "reason": "r"})
    assert info.value.problem is VerdictProblem.INVALID
    assert info.value.reason == f"grader's category is not one of A-E: {category!r}"


def test_a_reply_naming_no_category_lists_the_accepted_forms() -> None:
    with pytest.raises(VerdictError) as info:
        parse_category("The submission looks right to me.")
    assert info.value.problem is VerdictProblem.MISSING
    assert info.value.reason == "grader reply names no category: expected JSON {category, reason} or '(A)'..'(E)'"


def test_the_legacy_reason_keeps_its_own_closing_parenthesis() -> None:
    assert parse_category("(A) The submission is a subset (mostly)") == ("A", "The submission is a subset (mostly)")


# Other model-graded readers at their edges.


def test_closedqa_names_an_unreadable_pass_value() -> None:
    with pytest.raises(VerdictError) as info:
        parse_closedqa({"pass": "perhaps"})
    assert info.value.reason == "grader's 'pass' is not true or false: 'perhaps'"


def test_context_relevance_extracts_by_line_or_by_sentence_without_quotes() -> None:
    assert extracts("First. Second.\nThird", True) == ["First. Second.", "Third"]
    assert extracts("First. Second.\nThird", False) == ["First.", "Second.", "Third"]
    assert extracts('- "X marks the spot."', False) == ["X marks the spot."]


def test_conversation_window_verdicts_as_booleans_or_words() -> None:
    assert parse_window({"verdict": True, "reason": " on topic "}) == ("yes", "on topic")
    assert parse_window({"verdict": False}) == ("no", "")
    assert parse_window({"verdict": " No "}) == ("no", "")


def test_geval_reply_errors_name_what_was_wrong() -> None:
    with pytest.raises(VerdictError) as steps:
        parse_steps({"steps": []})
    assert (steps.value.reason, steps.value.problem) == ("grader's 'steps' must be a non-empty list of texts, got []", VerdictProblem.INVALID)
    with pytest.raises(VerdictError) as score:
        parse_evaluation({"score": 11, "reason": "r"}, 10)
    assert (score.value.reason, score.value.problem) == ("grader's 'score' must be a number from 0 to 10, got 11", VerdictProblem.INVALID)


def test_faithfulness_reads_no_verdicts_after_the_final_line() -> None:
    reply = "Statement 1: stated. Verdict: Yes\nFinal verdict for each statement in order: Yes. No.\n\nMy overall verdict: yes, mostly."
    assert parse_verdicts(reply, 2) == [True, False]
    with pytest.raises(VerdictError) as info:
        parse_verdicts("Verdict: Yes\nFinal verdict for each statement in order: \n\n", 1)
    assert (info.value.reason, info.value.problem) == ("the final verdict line lists no verdicts", VerdictProblem.MISSING)


def test_an_overflowing_norm_is_named() -> None:
    with pytest.raises(InputRejected) as info:
        cosine([0.0, 1.0], [1e200, 0.0])
    assert str(info.value) == "invalid vector norm: the embeddings overflow or contain NaN/infinite values"
