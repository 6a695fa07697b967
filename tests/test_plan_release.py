"""An eval's config is released once its plan holds the tests: the same plan, a smaller config.

`PlanOptions(release=True)` drops the raw tests, their source lines and their validated models
after the cases are built; the rows, ids, fingerprint and locations are those of a plan built
without releasing, the config's hash is kept, and the rest of the config keeps its lines (for
errors raised later). The config for results files, encoded test by test, is the masked config.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import pytest

from ci_grade import redact
from ci_grade.config.digest import canonical_digest
from ci_grade.config.loader import load_config
from ci_grade.grading import registry
from ci_grade.plan.build import PlanOptions, build_plan
from ci_grade.redact import Redactor
from ci_grade.report.outputs import encode_config
from tests.conftest import write

CONFIG = """
description: released
prompts: ['{{q}} {{n}}', 'again {{q}}']
providers: [echo]
defaultTest:
  vars: {n: 1}
  assert: [{type: icontains, value: again}]
tests:
  - {description: one, vars: {q: [a, b]}, assert: [{type: contains, value: a}]}
  - {vars: {q: c}, options: {provider: echo}}
  - {description: secret, vars: {q: d, apiKey: sk-live-0123456789abcdef}}
scenarios:
  - config: [{vars: {q: e}}, {vars: {q: f}}]
    tests: [{description: scenario, assert: [{type: contains, value: e}]}]
"""


def test_a_released_config_plans_the_same_rows(tmp_path: Path) -> None:
    path = write(tmp_path / "promptfooconfig.yaml", CONFIG)
    kept = load_config([path], registry.vocabulary(), cwd=tmp_path)
    released = load_config([path], registry.vocabulary(), cwd=tmp_path)
    hashed = kept.config_hash
    whole = build_plan(kept, PlanOptions(repeat=2))
    plan = build_plan(released, PlanOptions(repeat=2, release=True))
    assert plan.fingerprint == whole.fingerprint and (plan.groups, plan.total_rows) == (whole.groups, whole.total_rows)
    assert [(r.test_id, r.fingerprint, r.vars, r.location, r.prompt.key, r.repeat_index) for r in plan.rows] == [
        (r.test_id, r.fingerprint, r.vars, r.location, r.prompt.key, r.repeat_index) for r in whole.rows
    ]
    assert [r.test.model_dump() for r in plan.rows] == [r.test.model_dump() for r in whole.rows]
    assert released.config.tests == [] and released.config.scenarios is None
    assert "tests" not in released.raw and "scenarios" not in released.raw and released.config_hash == hashed
    assert str(released.sources.location(released.raw, "prompts")).endswith("promptfooconfig.yaml:2")
    assert str(released.sources.location(released.raw["defaultTest"]["assert"], 0)).endswith("promptfooconfig.yaml:6")
    assert kept.config.tests  # a plan built without releasing leaves the config whole


def test_the_config_for_results_files_is_masked_test_by_test(tmp_path: Path) -> None:
    path = write(tmp_path / "promptfooconfig.yaml", CONFIG)
    loaded = load_config([path], registry.vocabulary(), cwd=tmp_path)
    with redact.use(Redactor(["0123456789abcdef"])):
        encoded = encode_config(loaded.raw)
        whole = json.dumps(redact.current().data(loaded.raw), ensure_ascii=False, separators=(",", ":"))
    assert encoded.text == whole
    assert encoded.data()["tests"][2]["vars"]["apiKey"] == "***" and "0123456789abcdef" not in encoded.text


def test_a_released_plan_merges_defaults_into_the_configs_own_test_models(tmp_path: Path) -> None:
    """No copy of each test while the config still holds it: the model becomes the case."""
    path = write(tmp_path / "promptfooconfig.yaml", CONFIG)
    released = load_config([path], registry.vocabulary(), cwd=tmp_path)
    kept = load_config([path], registry.vocabulary(), cwd=tmp_path)
    own = list(released.config.tests)
    kept_own = [test.model_dump() for test in kept.config.tests]
    plan = build_plan(released, PlanOptions(release=True))
    whole = build_plan(kept, PlanOptions())
    second = next(row.test for row in plan.rows if row.test_index == 2)  # tests[1]: its own variables, shared by its rows
    assert second is own[1]
    assert [a.type for a in second.assert_ or []] == ["icontains"] and second.vars == {"n": 1, "q": "c"} and second.metadata == {}
    assert second.model_dump() == next(row.test for row in whole.rows if row.test_index == 2).model_dump()
    assert [test.model_dump() for test in kept.config.tests] == kept_own  # without release, the config's models stay as written


def test_the_config_hash_is_the_digest_of_the_whole_config_encoded_at_once(tmp_path: Path) -> None:
    path = write(tmp_path / "promptfooconfig.yaml", CONFIG)
    loaded = load_config([path], registry.vocabulary(), cwd=tmp_path)
    once = json.dumps(loaded.raw, sort_keys=True, default=str, ensure_ascii=False)
    assert loaded.config_hash == hashlib.sha256(once.encode()).hexdigest()[:16]
    for data in ({}, {"tests": []}, {"b": [[1, {"z": None, "a": "é\u2028"}], "x", 2.5], "a": {"k": [True]}, "c": Path("p")}, {1: "one", 2: [1]}):
        assert canonical_digest(data) == hashlib.sha256(json.dumps(data, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()  # type: ignore[arg-type]


def test_the_encoded_config_waits_on_disk_and_in_memory_without_a_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "promptfooconfig.yaml", CONFIG)
    loaded = load_config([path], registry.vocabulary(), cwd=tmp_path)
    with redact.use(Redactor(["0123456789abcdef"])):
        whole = json.dumps(redact.current().data(loaded.raw), ensure_ascii=False, separators=(",", ":"))
        on_disk = encode_config(loaded.raw)
        assert not any(isinstance(value, str) and value for value in vars(on_disk).values())  # the text is not held
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
        in_memory = encode_config(loaded.raw)
    assert on_disk.text == in_memory.text == whole


def test_a_test_model_listed_twice_gets_the_defaults_once_in_each_case(tmp_path: Path) -> None:
    path = write(tmp_path / "promptfooconfig.yaml", CONFIG)
    loaded = load_config([path], registry.vocabulary(), cwd=tmp_path)
    twice = loaded.config.tests[1]
    loaded.config.tests.append(twice)
    plan = build_plan(loaded, PlanOptions(release=True))
    cases = [row.test for row in plan.rows if row.vars.get("q") == "c"]
    assert len(cases) == 4  # two prompts, each listing
    assert all([a.type for a in case.assert_ or []] == ["icontains"] for case in cases)
    assert twice.assert_ is None  # left as written: copied, not merged in place
