"""factuality's category reader at its edges: a category must be exactly one letter A-E (in
optional parentheses), and a reply naming none says which forms are accepted."""

from __future__ import annotations

import pytest

from ci_grade.errors import VerdictError, VerdictProblem
from ci_grade.grading.model_graded.factuality import parse_category


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
