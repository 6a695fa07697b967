"""An eval's config is released once its plan holds the tests: the same plan, a smaller config.

`PlanOptions(release=True)` drops the raw tests, their source lines and their validated models
after the cases are built; the rows, ids, fingerprint and locations are those of a plan built
without releasing, the config's hash is kept, and the rest of the config keeps its lines (for
errors raised later). The config for results files, encoded test by test, is the masked config.
"""

from __future__ import annotations

import json
from pathlib import Path

from ci_grade import redact
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
