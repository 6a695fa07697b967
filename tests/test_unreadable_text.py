"""Text that does not read as YAML or JSON is "no object" to `contains-json` and to the grader
verdict reader, whatever PyYAML raises for it; anything else that goes wrong while reading is not
taken for unreadable text and comes through. And an unreadable `Retry-After` from GitHub leaves
the decision to urllib3, while any other failure there comes through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ci_grade.config import yaml12
from ci_grade.errors import VerdictError, VerdictProblem
from ci_grade.grading import verdicts
from ci_grade.grading.structured import json as json_assertions
from tests.assertion_runs import grade_outputs

UNREADABLE = {  # KEY stands for the key looked for
    "tag that does not fit": '{KEY: !!int "x"}',
    "set of a list": "{KEY: !!set [1]}",
    "empty float key": "{!!float &KEY: 1}",
    "unclosed quote": "{KEY: 'x}",
    "alias to nothing": "{KEY: *nothing}",
    "collection as key": "{[KEY]: 1}",
}


def test_contains_json_finds_no_object_in_unreadable_text(tmp_path: Path) -> None:
    cases: dict[str, tuple[Any, dict[str, Any]]] = {name: (f"reply: {text.replace('KEY', 'a')}", {"type": "contains-json"}) for name, text in UNREADABLE.items()}
    cases["readable"] = ("reply: {a: 1}", {"type": "contains-json"})
    graded = grade_outputs(tmp_path, cases)
    assert {name: (o.status, o.passed) for name, o in graded.items()} == {**dict.fromkeys(UNREADABLE, ("fail", False)), "readable": ("pass", True)}


@pytest.mark.parametrize("text", UNREADABLE.values())
def test_a_verdict_reader_skips_unreadable_objects(text: str) -> None:
    with pytest.raises(VerdictError) as caught:
        verdicts.extract(f"thinking {text.replace('KEY', 'pass')} done", "pass")
    assert caught.value.problem is VerdictProblem.MISSING
    assert verdicts.extract(f'{text.replace("KEY", "pass")} then {{"pass": true, "reason": "ok"}}', "pass") == {"pass": True, "reason": "ok"}


def test_a_failure_that_is_not_unreadable_text_comes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError("a bug, not a reply")

    monkeypatch.setattr(yaml12, "loads", broken)
    with pytest.raises(AttributeError, match="a bug"):
        verdicts.extract("{pass: yes, reason: fine}", "pass")
    monkeypatch.setattr(json_assertions.yaml, "load", broken)
    with pytest.raises(AttributeError, match="a bug"):
        json_assertions.extract_json("reply: {a: 1}")


def test_an_unreadable_retry_after_leaves_the_wait_to_urllib3(monkeypatch: pytest.MonkeyPatch) -> None:
    from urllib3 import HTTPResponse

    from ci_grade.github.client import _retry_class

    retry = _retry_class()(total=3)
    for header in ("soon", "9" * 5000, "Wed, 21 Oct 99999 07:28:00 GMT"):
        response = HTTPResponse(body=b"{}", headers={"Retry-After": header}, status=503, preload_content=True)
        assert retry.increment("GET", "/repos/o/r", response).total == 2, header

    def broken(self: Any, value: str) -> float:
        raise RuntimeError("a bug, not a header")

    monkeypatch.setattr(_retry_class(), "parse_retry_after", broken)
    response = HTTPResponse(body=b"{}", headers={"Retry-After": "5"}, status=503, preload_content=True)
    with pytest.raises(RuntimeError, match="a bug"):
        retry.increment("GET", "/repos/o/r", response)
