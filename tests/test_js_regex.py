"""`regex` without V8: Python's `re` decides only patterns on which it provably agrees with JavaScript.

Every pattern of the table is matched against every text both ways, by V8 (`new RegExp(p).test(t)`)
and by the translation, and the two must agree wherever the translation answers. The texts hold
what tells the engines apart: Unicode digits and letters, JavaScript's white space and line
terminators (and Python's extra ones), a trailing newline, astral characters.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from ci_grade.scripting import js, js_regex

TEXTS = [
    "", "abc", "ABC", "a\nb", "line\n", "x\r\ny", "tab\there", "café", "\u0663\u0664", "x\u00a0y", "x\u2028y",
    "x\u2029y", "\ufeffbom", "x\u180ey", "x\x1cy", "x\x85y", "x\u200by", "x\x0by", "order #123456: why", "über",
    "_under_score", "Straße", "İ", "a-b", "]", "\\", "a{2}", "aa", "aaa", "foo bar", "FOO", "yes", "no", "maybe",
    "1,000.50", '{"a": 1}', "colour", "color", "😀", "a😀b", "\ud83d", "x\u3000y", "\u2007", "é", "ü", "\x00",
]  # fmt: skip

# Patterns the translation decides (each is also checked against V8 on every text).
DECIDED = [
    "", "abc", "^abc$", "^a", "c$", "^$", "\\d", "\\d+", "^\\d+$", "\\D", "\\w+", "\\W", "\\s", "\\S+", "^\\s*$",
    "\\bfoo\\b", "\\Bar", "\\bé", ".", "^.$", "a.b", "^.*$", "[a-z]+", "[^a-z]", "[\\s\\d]", "[^\\s]", "[\\w-]", "[-a]",
    "[\\D]", "[\\W]", "(foo|bar)", "(?:ab)+", "a{2}", "a{2,}", "a{1,2}", "a*?b", "x?", "(?=a)a", "(?!a).", "\\u00e9",
    "\\x41", "\\.", "\\/", "\\$", "\\n", "\\t", "\\v", "\\f", "\\r\\n", "café", "é", "[é-ü]", "#\\d{6}: why", "^\\{.*\\}$",
    "yes|no", "\\u2028", "[\\u2028]", "colou?r", "\\d{3},\\d{3}", "[\\]]", "[\\\\]", "\\]", "a|", "()", "(a)(b)?",
    "^(yes|no|maybe)$", "\\x00", "[.]", "[$^]", "[a\\-z]", "\\s\\S", "^[^\\n]*$", "x\\u3000y",
]  # fmt: skip

# Patterns left to V8 (lookbehind, named groups, backreferences, annex-B oddities, possessive-looking
# quantifiers, empty classes, inline flags, exponential repetition, astral characters, syntax errors).
LEFT_TO_V8 = [
    "(?<=a)b", "(?<!a)b", "(?<name>a)\\k<name>", "(a)\\1", "\\p{L}", "\\k", "\\c", "\\0", "a{", "{", "}", "]", "a++", "a**",
    "[]", "[^]", "(?i)abc", "(a+)+", "(a|b)*", "\\u{1F600}", "😀", "[\\d-z]", "[a-z-0]", "\\", "(", ")", "x{2,1}", "[z-a]",
    "\\a", "\\e", "(?P<n>a)", "a{,2}", "\\ud83d", "[\\S]", "[\\b]", "(?=a)*", "^*", "a{1001}",
]  # fmt: skip


def v8_test(pattern: str, text: str) -> bool | str:
    _, result = js.run_inline(js._REGEX_TEST, ("pattern", "text"), [pattern, text])
    return str(result["invalid"]) if "invalid" in result else bool(result["matched"])


@pytest.mark.parametrize("pattern", DECIDED)
def test_the_translation_agrees_with_v8(pattern: str) -> None:
    assert js_regex.translate(pattern) is not None, pattern
    for text in TEXTS:
        decided = js_regex.test(pattern, text)
        expected = v8_test(pattern, text)
        if any(ord(c) > 0xFFFF for c in text):
            assert decided is None, (pattern, text)  # UTF-16 code units against code points: V8 decides
        else:
            assert decided == expected, (pattern, text, decided, expected)


@pytest.mark.parametrize("pattern", LEFT_TO_V8)
def test_patterns_outside_the_subset_go_to_v8(pattern: str) -> None:
    assert js_regex.translate(pattern) is None
    assert all(js_regex.test(pattern, text) is None for text in TEXTS)
    assert asyncio.run(js.regex_test(pattern, "a")) == v8_test(pattern, "a")
    assert js.regex_error(pattern) == (v8_test(pattern, "a") if isinstance(v8_test(pattern, "a"), str) else None)


def test_the_table_exercises_what_tells_python_and_javascript_apart() -> None:
    """Untranslated, Python's `re` would get these wrong; the translation gets them right."""
    differences = [("\\d", "\u0663"), ("^\\w$", "é"), ("\\s", "x\x1cy"), ("\\s", "x\x85y"), ("c$", "abc\n"), ("a.b", "a\rb"), ("a.b", "a\u2028b"), ("\\bé", "é")]
    for pattern, text in differences:
        naive = re.search(pattern, text) is not None
        assert naive != v8_test(pattern, text), (pattern, text)
        assert js_regex.test(pattern, text) == v8_test(pattern, text), (pattern, text)


def test_backtracking_beyond_the_budget_goes_to_v8() -> None:
    translation = js_regex.translate("a.*b")
    assert translation is not None and translation.unbounded == 1
    assert js_regex.test("a.*b", "a" * 200) is False
    long = "a" * 5000
    assert not translation.affordable(len(long))
    assert js_regex.test("a.*b", long) is None
    assert asyncio.run(js.regex_test("a.*b", long)) is False  # V8, under its time limit
    assert js_regex.test("#\\d{6}: why", "x" * 100_000 + "#123456: why") is True  # no unbounded repetition
    assert js_regex.translate("a*b*c*d*") is not None and not js_regex.translate("a*b*c*d*").affordable(100)  # type: ignore[union-attr]
