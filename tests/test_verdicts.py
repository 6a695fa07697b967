"""Reading verdicts out of grader replies, directly: what is tolerated, what is refused and why
(the model-graded tests run the same parser end to end against the loopback grader)."""

from __future__ import annotations

import json

import pytest

from ci_grade.errors import VerdictError, VerdictProblem
from ci_grade.grading.verdicts import (
    extract,
    find_objects,
    not_text,
    parse_bool,
    parse_number,
    strip_comments,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True), (False, False), (1, True), (0, False), (1.0, True), (0.0, False), (2, None), (0.5, None),
        ("true", True), (" Yes. ", True), ("PASS", True), ("passed", True), ("y", True), ("1", True),
        ("false", False), ("No", False), ("fail", False), ("FAILED.", False), ("n", False), ("0", False),
        ("", None), ("maybe", None), ("truthy", None), (None, None), ([True], None),
    ],
)
def test_parse_bool(value: object, expected: bool | None) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3.0), (0.25, 0.25), (" 0.75 ", 0.75), ("-2", -2.0), ("1e-3", 0.001),
        (True, None), (False, None), ("high", None), ("", None), (None, None),
        (float("nan"), None), (float("inf"), None), (float("-inf"), None), ("nan", None), ("inf", None), ("-Infinity", None),
    ],
)
def test_parse_number(value: object, expected: float | None) -> None:
    result = parse_number(value)
    assert result == expected and (result is None or isinstance(result, float))


def test_strip_comments_keeps_strings_and_urls() -> None:
    text = '{"url": "https://x.example/a//b", // the link\n "note": "say // not a comment", \'q\': \'it\\\'s // fine\'}\n// done'
    assert strip_comments(text) == '{"url": "https://x.example/a//b", \n "note": "say // not a comment", \'q\': \'it\\\'s // fine\'}\n'
    assert strip_comments("// only a comment") == ""
    assert strip_comments('a: "esc \\" // kept" // dropped') == 'a: "esc \\" // kept" '
    assert strip_comments("see http://a.example") == "see http://a.example"


def test_find_objects_takes_the_outermost_complete_objects_in_order() -> None:
    found = find_objects('prose {"a": {"b": 1}} then {[bad} and {pass: true, // yes\n score: 2} and {"c": "}"} end {"open": 1')
    assert [f.value for f in found] == [{"a": {"b": 1}}, {"pass": True, "score": 2}, {"c": "}"}]
    text = 'x {"a": 1} y'
    (only,) = find_objects(text)
    assert text[only.start:only.end] == '{"a": 1}'
    assert find_objects("no braces") == [] and find_objects('{"list": [1, 2]') == []
    assert [f.value for f in find_objects('{"s": "a \\"} b"}')] == [{"s": 'a "} b'}]
    assert [f.value for f in find_objects("[1, 2] {x}")] == [{"x": None}]  # YAML reads `{x}` as a mapping


@pytest.mark.parametrize(
    "reply",
    [
        '{"pass": true, "score": 1, "reason": "ok"}',
        'Sure! ```json\n{"pass": true, "score": 1, "reason": "ok"}\n``` Hope that helps.',
        "{pass: true, score: 1, reason: ok}",
        '{"pass": "yes", "score": 1, "reason": "ok"} and again {"pass": true, "score": 1.0}',
        '{"pass": true, "score": 1, "reason": "the JSON key pass: true is fine"}',
    ],
)
def test_tolerated_replies(reply: str) -> None:
    verdict = extract(reply, "pass", compare=("pass", "score"))
    assert parse_bool(verdict["pass"]) is True and parse_number(verdict["score"]) == 1.0


def test_a_mapping_reply_is_the_verdict_when_it_has_the_key() -> None:
    assert extract({"pass": False, "x": 1}, "pass") == {"pass": False, "x": 1}
    with pytest.raises(VerdictError) as info:
        extract({"score": 1}, "pass")
    assert (info.value.problem, info.value.reason) == (VerdictProblem.MISSING, "grader reply has no 'pass' field")


@pytest.mark.parametrize(
    ("reply", "problem", "message"),
    [
        ("", VerdictProblem.EMPTY, "grader returned an empty reply"),
        ("   \n ", VerdictProblem.EMPTY, "grader returned an empty reply"),
        (None, VerdictProblem.EMPTY, "grader returned an empty reply"),
        ("I think it passes.", VerdictProblem.MISSING, "grader reply contains no JSON object with 'pass': 'I think it passes.'"),
        ('{"score": 1}', VerdictProblem.MISSING, "grader reply contains no JSON object with 'pass'"),
        ('{"pass": true} {"pass": false}', VerdictProblem.CONFLICTING, "grader reply contains conflicting verdicts"),
        ('{"pass": true, "echo": {"pass": false}}', VerdictProblem.CONFLICTING, "conflicting verdicts"),
        ('{"pass": true, "items": [{"x": [{"pass": "no"}]}]}', VerdictProblem.CONFLICTING, "conflicting verdicts"),
        ('{"pass": true} but really pass: false', VerdictProblem.AMBIGUOUS, "grader reply has a different 'pass' outside its JSON verdict (ambiguous)"),
        ('{pass: true, reason: x, verdict: {"pass": false}', VerdictProblem.AMBIGUOUS, "(ambiguous)"),
        (7, VerdictProblem.MISSING, "grader replied with a number (7), not a JSON object with 'pass'"),
        (True, VerdictProblem.MISSING, "grader replied with a boolean (true), not a JSON object with 'pass'"),
        (["é", 1], VerdictProblem.MISSING, 'grader replied with a list (["é", 1]), not a JSON object with \'pass\''),
    ],
)
def test_refused_replies(reply: object, problem: VerdictProblem, message: str) -> None:
    with pytest.raises(VerdictError) as info:
        extract(reply, "pass")
    assert info.value.problem is problem
    assert message in info.value.reason


def test_the_same_verdict_repeated_or_echoed_is_accepted() -> None:
    assert extract('{"pass": true, "echo": {"pass": "yes"}} then pass: true', "pass") == {"pass": True, "echo": {"pass": "yes"}}
    assert extract('{"pass": "Yes"} {"pass": true}', "pass") == {"pass": "Yes"}


def test_compare_names_the_fields_that_must_agree() -> None:
    reply = '{"pass": true, "score": 0.9} {"pass": true, "score": 0.4}'
    assert extract(reply, "pass") == {"pass": True, "score": 0.9}  # only `pass` must agree by default
    with pytest.raises(VerdictError) as info:
        extract(reply, "pass", compare=("pass", "score"))
    assert info.value.problem is VerdictProblem.CONFLICTING


def test_letter_choices_outside_the_object_must_agree() -> None:
    assert extract('{"choice": "B"} so choice: b', "choice") == {"choice": "B"}
    with pytest.raises(VerdictError) as info:
        extract('{"choice": "B"} no wait, choice: C', "choice")
    assert info.value.problem is VerdictProblem.AMBIGUOUS
    assert extract('{"score": 0.5} score = 0.50', "score") == {"score": 0.5}
    with pytest.raises(VerdictError):
        extract('{"score": 0.5} score = 0.7', "score")


def test_not_text_names_what_came_back() -> None:
    assert not_text(None, "a category").reason == "grader returned an empty reply"
    assert not_text(None, "a category").problem is VerdictProblem.EMPTY
    assert not_text(False, "x").reason == "grader replied with a boolean (false), not x"
    assert not_text(2.5, "x").reason == "grader replied with a number (2.5), not x"
    assert not_text({"a": 1}, "x").reason == 'grader replied with dict ({"a": 1}), not x'
    assert not_text((1, "é"), "x").reason == 'grader replied with tuple ([1, "é"]), not x'
    assert not_text({"when": object}, "x").reason.startswith('grader replied with dict ({"when": "<class \'object\'>"})')
    long = not_text(list(range(100)), "x")
    assert long.problem is VerdictProblem.MISSING
    shown = long.reason.removeprefix("grader replied with a list (").removesuffix("), not x")
    assert len(shown) == 200 and shown.endswith("...") and shown.startswith("[0, 1, 2")
    exact = not_text("a" * 198, "x").reason  # 200 characters with its quotes: shown whole
    assert exact == f'grader replied with str ("{"a" * 198}"), not x'


def test_a_huge_reply_is_scanned_only_so_far() -> None:
    reply = "x " * 125_000 + '{"pass": true}'
    with pytest.raises(VerdictError) as info:
        extract(reply, "pass")
    assert info.value.problem is VerdictProblem.MISSING
    assert extract("x " * 1000 + '{"pass": true}', "pass") == {"pass": True}


@pytest.mark.parametrize(
    "text",
    [
        '{"reason": "meets the rubric", "pass": true, "score": 1.0}',
        '{"pass": false, "detail": {"pass": true, "note": "a } brace and a \\" quote"}}',
        '{"reason": "ünïcode ✓ and {braces}", "score": 0.5}',
        "{}",
    ],
)
def test_a_reply_that_is_one_json_object_reads_as_the_full_scan_reads_it(text: str) -> None:
    """The quick path (the whole reply is one JSON object) finds what the character scan finds."""
    (quick,) = find_objects(text)
    (scanned,) = find_objects(" " + text)  # not starting with "{": the full scan
    assert (quick.value, quick.start, quick.end) == (scanned.value, scanned.start - 1, scanned.end - 1)
    assert quick.value == json.loads(text)


@pytest.mark.parametrize(
    ("text", "count"),
    [('{"pass": true} {"pass": false}', 2), ('{"pass": true, "reason": "x"', 0), ("{pass: true}", 1), ('{"a": 1}}', 1)],
)
def test_replies_that_are_not_one_json_object_take_the_full_scan(text: str, count: int) -> None:
    assert len(find_objects(text)) == count
