"""levenshtein, rouge-n and bleu: the metric math on hand-computed examples, then the assertions end to end."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ci_grade.grading.metrics import bleu, brevity_penalty, levenshtein, rouge_n
from ci_grade.grading.treebank import tokenize
from tests.assertion_runs import evaluate, first, grade_outputs


def test_levenshtein_distance() -> None:
    assert levenshtein("kitten", "sitting") == 3  # k->s, e->i, +g
    assert levenshtein("flaw", "lawn") == 2  # -f, +n
    assert levenshtein("", "abc") == 3
    assert levenshtein("same", "same") == 0


def test_levenshtein_counts_utf16_code_units() -> None:
    """As JavaScript strings (promptfoo's fastest-levenshtein): an astral character is two units."""
    assert levenshtein("kitten", "ki🙂tten") == 2
    assert levenshtein("😀", "😁") == 1  # the same high surrogate
    assert levenshtein("a", "😀") == 2


def test_treebank_tokens_as_js_rouge_gives_them() -> None:
    """promptfoo's rouge-n tokenizer (js-rouge's treeBankTokenize): punctuation, quotes and
    contraction parts are tokens; numbers, abbreviations and `U.S.` stay whole."""
    assert tokenize("Paris is the capital of France.") == ["Paris", "is", "the", "capital", "of", "France", "."]
    assert tokenize('She said "I can\'t go" -- they\'re late, aren\'t they?') == [
        "She", "said", "``", "I", "ca", "n't", "go", "''", "--", "they", "'re", "late", ",", "are", "n't", "they", "?",
    ]  # fmt: skip
    assert tokenize("'Tis gonna be 3:30 p.m. in the U.S., costing $1,000.50; wow!") == [
        "'T", "is", "gon", "na", "be", "3:30", "p.m.", "in", "the", "U.S.", ",", "costing", "$", "1,000.50", ";", "wow", "!",
    ]  # fmt: skip
    assert tokenize("He wrote ``quoted'' and 'single' words...") == [
        "He", "wrote", "``", "quoted", "''", "and", "'single", "'", "words", "...",
    ]  # fmt: skip
    assert tokenize("Ça coûte 1,000 € (naïve 😀 estimate)…") == ["Ça", "coûte", "1,000", "€", "(", "naïve", "😀", "estimate", ")", "…"]
    assert tokenize("CANNOT\tgimme\u00a0more'n that") == ["CAN", "NOT", "gim", "me", "more", "'n", "that"]
    assert tokenize('The end." Then: "a new start"') == ["The", "end.", "''", "Then", ":", "``", "a", "new", "start", "''"]
    assert tokenize("“Smart” quotes, l'été, 日本語です。") == ["“Smart”", "quotes", ",", "l'été", ",", "日本語です。"]
    # a quote after half of an astral character (JavaScript reads UTF-16 units) opens nothing
    assert tokenize('a\U00010100"b c"') == ["a\U00010100", "''", "b", "c", "''"]
    assert tokenize(" \n ") == []


def test_rouge_n_is_the_f1_of_clipped_unigram_counts() -> None:
    """promptfoo's rouge-n: F1 of clipped unigram counts over lower-cased treebank tokens,
    punctuation included (ci-grade used to score recall over words only: 1.0 and 5/6 below)."""
    assert rouge_n("Paris is the capital of France.", "Paris") == 0.25  # P 1/7, R 1/1
    assert rouge_n("The cat was on the mat.", "the cat sat on the mat") == 0.7692307692307692  # P 5/7, R 5/6
    assert rouge_n("the the the", "the cat") == 0.4  # three "the" match the reference's one: P 1/3, R 1/2
    assert rouge_n("The Cat sat on the mat", "the cat sat on the mat") == 1.0
    assert rouge_n("", "the cat") == 0.0
    assert rouge_n("The cat was on the mat.", "?!") == 0.0
    with pytest.raises(ValueError):
        rouge_n("anything", " \n ")
    with pytest.raises(ValueError, match="over 1,000,000 characters"):
        rouge_n("x" * 1_000_001, "x")


def test_bleu_on_hand_computed_examples() -> None:
    assert bleu("the cat sat on the mat", ["the cat sat on the mat"]) == pytest.approx(1.0)
    # p1..p4 = 5/6, 3/5, 2/4, 1/3; equal lengths so no brevity penalty
    assert bleu("the cat sat on a mat", ["the cat sat on the mat"]) == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    # 3 words: every available order (1..3) matches fully; 4-grams do not exist and are left out;
    # brevity penalty exp(1 - 6/3)
    assert bleu("the cat sat", ["the cat sat on the mat"]) == pytest.approx(math.exp(-1))
    # clipping by the largest count in any one reference: "a" x2 (ref 2), "a b" (ref 1), "a a" (ref 2);
    # no trigram matches -> precision 1e-7; weights renormalised over the 3 available orders
    assert bleu("a a b", ["a b", "a a c"]) == pytest.approx(1e-7 ** (1 / 3))
    # case-insensitive; blank references are ignored
    assert bleu("The Cat Sat On The Mat", ["", "  ", "the cat sat on the mat"]) == pytest.approx(1.0)
    assert bleu("", ["the cat"]) == 0.0
    with pytest.raises(ValueError):
        bleu("the cat", ["", " "])


def test_brevity_penalty() -> None:
    assert brevity_penalty(7, [6]) == 1.0
    assert brevity_penalty(3, [6]) == pytest.approx(math.exp(1 - 6 / 3))
    assert brevity_penalty(6, [4, 8]) == 1.0  # tie between 4 and 8: the shorter reference is used
    assert brevity_penalty(5, [9, 6]) == pytest.approx(math.exp(1 - 6 / 5))


def test_levenshtein_assertion(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "within default 5": ("hello wrld", {"type": "levenshtein", "value": "hello world"}),
            "beyond default 5": ("goodbye moon", {"type": "levenshtein", "value": "hello world"}),
            "threshold 0 means exact": ("hell", {"type": "levenshtein", "value": "hello", "threshold": 0}),
            "threshold 0 exact match": ("hello", {"type": "levenshtein", "value": "hello", "threshold": 0}),
            "custom threshold": ("kitten", {"type": "levenshtein", "value": "sitting", "threshold": 3}),
            "templated value": ("foobar", {"type": "levenshtein", "value": "{{ expected }}", "threshold": 1}),
            "not-levenshtein": ("completely different", {"type": "not-levenshtein", "value": "hello"}),
            "not-levenshtein fails": ("hello", {"type": "not-levenshtein", "value": "hello"}),
            "empty output": ("", {"type": "levenshtein", "value": "abc"}),
            "missing value": ("x", {"type": "levenshtein"}),
            "object value": ("x", {"type": "levenshtein", "value": {"a": 1}}),
        },
        defaultTest={"vars": {"expected": "foobaz"}},
    )
    expected = {
        "within default 5": "pass", "beyond default 5": "fail", "threshold 0 means exact": "fail",
        "threshold 0 exact match": "pass", "custom threshold": "pass", "templated value": "pass", "not-levenshtein": "pass",
        "not-levenshtein fails": "fail", "empty output": "pass", "missing value": "error", "object value": "error",
    }  # fmt: skip
    assert {k: v.status for k, v in r.items()} == expected
    assert r["threshold 0 means exact"].reason == "Levenshtein distance 1 is greater than threshold 0"
    assert r["not-levenshtein fails"].reason == "Levenshtein distance 0 is less than or equal to threshold 5"
    assert r["missing value"].reason == "levenshtein needs a string value (the expected text)"


def test_rouge_n_assertion_scores_and_inverts(tmp_path: Path) -> None:
    """Scores as promptfoo 0.123.1 gives them for the same outputs: F1 over treebank tokens (these
    used to pin recall over words, 5/6, and an error for a punctuation-only reference)."""
    out, ref = "The cat was on the mat.", "the cat sat on the mat"
    r = grade_outputs(
        tmp_path,
        {
            "default threshold": (out, {"type": "rouge-n", "value": ref}),
            "higher threshold": (out, {"type": "rouge-n", "value": ref, "threshold": 0.9}),
            "not-rouge-n": (out, {"type": "not-rouge-n", "value": ref}),
            "not-rouge-n higher threshold": (out, {"type": "not-rouge-n", "value": ref, "threshold": 0.9}),
            "one word of a sentence": ("Paris is the capital of France.", {"type": "rouge-n", "value": "Paris"}),
            "contractions and quotes": (
                'She said "I can\'t go" -- they\'re late, aren\'t they?',
                {"type": "rouge-n", "value": 'she said: "i cannot go"; they are late, are not they?'},
            ),
            "empty output": ("", {"type": "rouge-n", "value": ref}),
            "punctuation reference": (out, {"type": "rouge-n", "value": "?!"}),
            "blank reference": (out, {"type": "rouge-n", "value": "  "}),
            "list value": (out, {"type": "rouge-n", "value": [ref]}),
        },
    )
    assert r["default threshold"].status == "pass" and r["default threshold"].score == 0.7692307692307692
    assert r["higher threshold"].status == "fail" and r["higher threshold"].score == 0.7692307692307692
    assert r["higher threshold"].reason == "ROUGE-N score 0.77 is less than threshold 0.9"  # toFixed(2), as promptfoo
    assert r["default threshold"].reason == "ROUGE-N score 0.77 is greater than or equal to threshold 0.75"  # said on a pass too
    assert r["not-rouge-n"].status == "fail" and r["not-rouge-n"].score == 0.23076923076923084
    assert r["not-rouge-n"].reason == "ROUGE-N score 0.77 is greater than or equal to threshold 0.75"
    assert r["not-rouge-n higher threshold"].status == "pass" and r["not-rouge-n higher threshold"].score == 0.23076923076923084
    assert r["one word of a sentence"].status == "fail" and r["one word of a sentence"].score == 0.25
    assert r["contractions and quotes"].status == "fail" and r["contractions and quotes"].score == 0.6857142857142857
    assert r["empty output"].status == "fail" and r["empty output"].score == 0.0
    assert r["punctuation reference"].status == "fail" and r["punctuation reference"].score == 0.0
    # a reference without tokens is a missing input (promptfoo scores 0)
    assert r["blank reference"].status == "error" and r["list value"].status == "error"


def test_astral_characters_end_to_end(tmp_path: Path) -> None:
    """An emoji is two UTF-16 code units to levenshtein and one token to rouge-n (promptfoo's results)."""
    rows = evaluate(tmp_path, """
        prompts: ['{{text}}']
        providers: [echo]
        tests:
          - vars: {text: kitten}
            assert: [{type: levenshtein, value: ki🙂tten, threshold: 1}]
          - vars: {text: 'Ça coûte 1,000 € (naïve 😀 estimate)...'}
            assert: [{type: rouge-n, value: ça coûte 1000 € — naïve estimate 😀}]
        """)
    distance, rouge = first(rows[0]), first(rows[1])
    assert distance.status == "fail" and distance.reason == "Levenshtein distance 2 is greater than threshold 1"
    assert rouge.status == "fail" and rouge.score == 0.6666666666666666


def test_bleu_assertion(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "above default 0.5": ("the cat sat on a mat", {"type": "bleu", "value": "the cat sat on the mat"}),
            "below default 0.5": ("the cat sat", {"type": "bleu", "value": "the cat sat on the mat"}),
            "several references": ("the cat sat", {"type": "bleu", "value": ["a dog ran", "the cat sat"]}),
            "blank references ignored": ("the cat sat", {"type": "bleu", "value": ["", "the cat sat"]}),
            "custom threshold": ("the cat sat", {"type": "bleu", "value": "the cat sat on the mat", "threshold": 0.3}),
            "not-bleu": ("a dog barked loudly", {"type": "not-bleu", "value": "the cat sat on the mat"}),
            "only blank references": ("x", {"type": "bleu", "value": ["", "  "]}),
            "non-string reference": ("x", {"type": "bleu", "value": ["a", 3]}),
            "missing value": ("x", {"type": "bleu"}),
        },
    )
    assert r["above default 0.5"].status == "pass"
    assert r["above default 0.5"].score == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    assert r["below default 0.5"].status == "fail" and r["below default 0.5"].score == pytest.approx(math.exp(-1))
    assert r["below default 0.5"].reason == "BLEU score 0.3679 is less than threshold 0.5"
    assert r["several references"].status == "pass" and r["several references"].score == pytest.approx(1.0)
    assert r["blank references ignored"].score == pytest.approx(1.0)
    assert r["custom threshold"].status == "pass"
    assert r["not-bleu"].status == "pass" and r["not-bleu"].score > 0.99
    assert {r[k].status for k in ("only blank references", "non-string reference", "missing value")} == {"error"}


def test_metrics_on_data_and_empty_outputs(tmp_path: Path) -> None:
    r = grade_outputs(
        tmp_path,
        {
            "levenshtein data": ({"a": 1}, {"type": "levenshtein", "value": '{"a":1}', "threshold": 0}),
            "rouge-n data": ({"city": "paris"}, {"type": "rouge-n", "value": "city paris"}),
            "bleu empty": ("", {"type": "bleu", "value": "the cat"}),
        },
    )
    assert r["levenshtein data"].status == "pass"
    # JSON.stringify text `{"city":"paris"}`: braces, quotes and colon are tokens too (promptfoo: 0.3636...)
    assert r["rouge-n data"].status == "fail" and r["rouge-n data"].score == 0.3636363636363636
    assert r["bleu empty"].status == "fail" and r["bleu empty"].score == 0.0


def test_values_of_the_wrong_kind_are_errors_as_in_promptfoo(tmp_path: Path) -> None:
    """promptfoo refuses these values (an ERROR row) where ci-grade used to grade them, and
    measures the distance to empty text."""
    r = grade_outputs(
        tmp_path,
        {
            "contains true": ("x true", {"type": "contains", "value": True}),
            "contains list": ("a", {"type": "contains", "value": ["a"]}),
            "contains number": ("order 12", {"type": "contains", "value": 12}),
            "starts-with number": ("12 apples", {"type": "starts-with", "value": 12}),
            "levenshtein number": ("123", {"type": "levenshtein", "value": 123}),
            "levenshtein empty": ("abc", {"type": "levenshtein", "value": ""}),
            "rouge-n number": ("12", {"type": "rouge-n", "value": 12}),
            "bleu number": ("42", {"type": "bleu", "value": 42}),
        },
    )
    assert {name: outcome.status for name, outcome in r.items()} == {
        "contains true": "error", "contains list": "error", "contains number": "pass", "starts-with number": "error",
        "levenshtein number": "error", "levenshtein empty": "pass", "rouge-n number": "error", "bleu number": "error",
    }  # fmt: skip
