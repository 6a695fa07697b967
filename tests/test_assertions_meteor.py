"""`meteor`, end to end: `ci-grade eval` over the parity cases in bench/parity/meteor.

The expected scores are promptfoo 0.123.1's for the same config (its `meteor.ts` with npm
`natural` loaded: `bench/parity/meteor/natural_hook.mjs` says why that needs a hook), to 4
decimals. promptfoo reads WordNet 3.1, these runs Debian's WordNet 3.0: the one case whose
synonym only 3.1 has is pinned with ci-grade's 3.0 score (docs/compatibility.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.grading import meteor, wordnet
from tests.assertion_runs import first, grade_outputs
from tests.conftest import run_cli, write

REPO = Path(__file__).resolve().parent.parent
PARITY = REPO / "bench" / "parity" / "meteor" / "promptfooconfig.yaml"

# description: (pass, score) as promptfoo 0.123.1 grades it
PROMPTFOO = {
    "identical": (True, 0.9977),
    "synonym car and auto": (True, 0.9922),
    "synonym start and begin": (True, 0.9815),
    "stems": (True, 0.6233),
    "fragmented": (True, 0.8519),
    "reversed": (True, 0.5),
    "no match": (False, 0),
    "several references": (True, 0.83),
    "threshold 0.8": (False, 0.7433),
    "threshold 0.2": (True, 0.5077),
    "alpha beta gamma": (True, 0.6444),
    "dots and spaces": (True, 0.8523),
    "capitals and synonyms": (False, 0.3333),
    "punctuation kept": (False, 0),
    "repeated words": (False, 0.2273),
    "long sentence": (True, 0.6944),
    "stems block synonyms": (False, 0.1667),
    "not-meteor passes": (True, 1),
    "not-meteor fails": (False, 0.0185),
    "wordnet 3.1 synonym": (True, 0.9922),
}
WORDNET_30 = {"wordnet 3.1 synonym": (True, 0.6389)}  # "framework" is a synonym of "frame" from WordNet 3.1 on


@pytest.fixture
def debian_wordnet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WNSEARCHDIR", raising=False)
    monkeypatch.delenv("WNHOME", raising=False)
    assert wordnet.directory() == wordnet.DEBIAN_DIRECTORY, "apt-get install wordnet-base"


def test_parity_cases_score_as_promptfoo(tmp_path: Path, debian_wordnet: None) -> None:
    write(tmp_path / "promptfooconfig.yaml", PARITY.read_text())
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code in (0, 1), result.err
    assert "unknown key" not in result.err  # alpha, beta and gamma are meteor's own keys
    rows = {row["description"]: first(row) for row in json.loads((tmp_path / "out.json").read_text())["results"]["results"]}
    expected = PROMPTFOO | WORDNET_30
    assert set(rows) == set(expected)
    for name, (passed, score) in expected.items():
        assert (rows[name].passed, round(rows[name].score, 4)) == (passed, score), name
    assert rows["threshold 0.8"].reason == "METEOR score 0.7433 did not meet threshold 0.8"
    assert rows["not-meteor fails"].reason == "METEOR score 0.9815 did not meet threshold 0.5"
    assert rows["not-meteor passes"].reason == rows["identical"].reason == "METEOR assertion passed"


def test_tokens_keep_promptfoos_split() -> None:
    assert meteor.tokens(" Hello... world. ") == ["", "hello", "world", ""]
    assert meteor.tokens("a\u00a0b\tC.D") == ["a", "b", "c.d"]


def test_stems_match_natural() -> None:
    """npm natural's Porter stems (NLTK's Martin mode agrees on 488,089 of 488,348 word forms tried)."""
    stem = meteor._stem()
    natural = {
        "running": "run", "quickly": "quickli", "happiness": "happi", "relational": "relat", "conditional": "condit",
        "agreed": "agre", "ponies": "poni", "dying": "dy", "generalization": "gener", "hopeful": "hope",
        "goodness": "good", "electrical": "electr", "adjustment": "adjust", "as": "as", "is": "is", "sky": "sky",
    }  # fmt: skip
    assert {word: stem(word) for word in natural} == natural
    assert stem("myopic") == "myopic"  # natural: "myop" (compatibility.md lists the difference)


def test_wordnet_lookups_take_words_as_written(debian_wordnet: None) -> None:
    net = wordnet.load(wordnet.DEBIAN_DIRECTORY)
    assert {"car", "auto", "automobile", "machine", "motorcar"} <= net.synonyms("car")
    assert net.synonyms("cars") == frozenset()  # no morphological reduction, as natural
    assert {"big(a)", "large"} <= net.synonyms("big")  # adjective markers kept
    assert "Einstein" in net.synonyms("einstein")


def _dict_directory(root: Path) -> Path:
    """A two-synset WordNet database (noun only; the other parts empty) in wndb(5WN)'s format."""
    root.mkdir()
    header = "  1 This is a license line.\n"
    lines = [header]
    offsets = []
    for words in (["tiny_thing", "mite"], ["Mite", "acarid"]):
        offsets.append(sum(len(line.encode()) for line in lines))
        pairs = " ".join(f"{w} 0" for w in words)
        lines.append(f"{offsets[-1]:08d} 05 n {len(words):02x} {pairs} 000 | a gloss\n")
    write(root / "data.noun", "".join(lines))
    write(root / "index.noun", header + f"acarid n 1 0 1 0 {offsets[1]:08d}\nmite n 2 0 2 0 {offsets[0]:08d} {offsets[1]:08d}\n")
    for part in ("verb", "adj", "adv"):
        write(root / f"data.{part}", header)
        write(root / f"index.{part}", header)
    return root


def test_wnsearchdir_names_the_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WNSEARCHDIR", str(_dict_directory(tmp_path / "dict")))
    assert wordnet.load(wordnet.directory() or Path()).synonyms("MITE") == {"tiny_thing", "mite", "Mite", "acarid"}
    r = grade_outputs(tmp_path, {
        "synonym": ("the mite", {"type": "meteor", "value": "the acarid"}),
        "underscored synonyms do not count": ("mite", {"type": "meteor", "value": "tiny_thing"}),
    })  # fmt: skip
    assert (r["synonym"].passed, round(r["synonym"].score, 4)) == (True, 0.9375)
    assert (r["underscored synonyms do not count"].passed, r["underscored synonyms do not count"].score) == (False, 0)


def test_bad_values_are_errors(tmp_path: Path, debian_wordnet: None) -> None:
    r = grade_outputs(tmp_path, {
        "number value": ("1", {"type": "meteor", "value": 1}),
        "empty list": ("a", {"type": "meteor", "value": []}),
        "empty output": ("", {"type": "meteor", "value": "a"}),
        "bad alpha": ("a", {"type": "meteor", "value": "a", "alpha": "high"}),
    })  # fmt: skip
    assert {k: v.status for k, v in r.items()} == dict.fromkeys(r, "error")
    assert r["number value"].reason == '"meteor" assertion must have a string or array of strings value'
    assert "non-empty output and at least one reference" in r["empty output"].reason
    assert "non-empty output and at least one reference" in r["empty list"].reason
    assert r["bad alpha"].reason == "meteor alpha must be a number, got high"


def test_without_wordnet_the_config_is_refused_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WNSEARCHDIR", str(tmp_path / "nowhere"))
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert:\n      - type: not-meteor\n        value: x\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2
    assert "promptfooconfig.yaml:5 tests[0].assert[0].type: meteor assertions need NLTK and the WordNet database: pip install 'ci-grade[meteor]'" in result.err
    assert f"no WordNet index and data files in {tmp_path / 'nowhere'}" in result.err


def test_unknown_keys_of_an_assertion_are_still_warned_about(tmp_path: Path, debian_wordnet: None) -> None:
    write(tmp_path / "promptfooconfig.yaml", json.dumps({"prompts": ["a b"], "providers": ["echo"], "tests": [{"assert": [{"type": "meteor", "value": "a b", "gamma": 0, "bogus": 1}]}]}))
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "unknown key 'assert[].bogus' ignored" in result.err and "gamma" not in result.err
    rows = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    assert first(rows[0]).score == 1.0  # gamma 0: no fragmentation penalty


def test_without_nltk_the_install_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "nltk" else real(name, *rest))
    assert meteor.missing_requirements() == meteor.INSTALL_HINT
