"""Repeats: `--repeat`, `evaluateOptions.repeat` and a test's own `options.repeat`, numbered as promptfoo numbers them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_grade.plan.shard import Shard
from tests.conftest import run_cli
from tests.plan_helpers import eval_rows, plan_for
from tests.servers.llm_server import LLMServer

OWN_REPEATS = """
prompts: ["hi {{x}}"]
providers: [echo]
defaultTest:
  options: {prefix: "P:", suffix: ":S"}
tests:
  - vars: {x: one}
    options: {repeat: 3}
    assert: [{type: contains, value: one}]
  - vars: {x: [two, three]}
    assert: [{type: contains, value: t}]
  - vars: {x: four}
    options: {repeat: 2, suffix: "!"}
    assert: [{type: contains, value: "P:hi four!"}]
"""

ASKING = """
prompts: ['Question: {{{{q}}}}']
providers: [openai:chat:gpt-4.1-mini]
tests:
  - vars: {{q: capital of France}}
    options: {{repeat: {repeat}}}
    assert: [{{type: contains, value: Paris}}]
"""


def test_a_tests_own_repeat_runs_it_that_often_numbered_as_promptfoo_does(tmp_path: Path) -> None:
    code, rows, err = eval_rows(tmp_path, OWN_REPEATS)
    assert code == 0, err
    # promptfoo 0.123.1 on this config: rows in this order, testIdx 0-6, a test's repeats side by side
    assert [(r["testIdx"], r["vars"]["x"], r["repeatIndex"], r["prompt"]["raw"]) for r in rows] == [
        (0, "one", 0, "P:hi one:S"),
        (1, "one", 1, "P:hi one:S"),
        (2, "one", 2, "P:hi one:S"),
        (3, "two", 0, "P:hi two:S"),
        (4, "three", 0, "P:hi three:S"),
        (5, "four", 0, "P:hi four!"),
        (6, "four", 1, "P:hi four!"),
    ]
    assert all(r["success"] for r in rows)
    assert len({r["testId"] for r in rows}) == 4  # repeats keep the test's id


def test_own_repeat_beats_the_global_one_and_defaulttest_sets_it_for_all(tmp_path: Path) -> None:
    code, rows, err = eval_rows(tmp_path, OWN_REPEATS, "--repeat", "4")
    assert code == 0, err
    counts = {x: sum(1 for r in rows if r["vars"]["x"] == x) for x in ("one", "two", "three", "four")}
    assert counts == {"one": 3, "two": 4, "three": 4, "four": 2}
    assert [r["testIdx"] for r in rows] == list(range(13))
    everyone = OWN_REPEATS.replace('options: {prefix: "P:", suffix: ":S"}', 'options: {prefix: "P:", suffix: ":S", repeat: 2}')
    code, rows, err = eval_rows(tmp_path, everyone)
    assert code == 0, err
    assert [r["vars"]["x"] for r in rows] == ["one"] * 3 + ["two", "three"] * 2 + ["four"] * 2


def test_plan_sizes_and_shards_count_each_tests_repeats(tmp_path: Path) -> None:
    whole = plan_for(tmp_path, OWN_REPEATS)
    assert (whole.total_rows, whole.repeat, whole.groups) == (7, 3, 4)
    assert len({row.index for row in whole.rows}) == 7
    shards = [plan_for(tmp_path, OWN_REPEATS, shard=Shard(k, 2)) for k in (1, 2)]
    assert sorted(row.index for s in shards for row in s.rows) == list(range(7))
    for part in shards:  # every repeat of a test stays in the test's shard
        for test_id in {row.test_id for row in part.rows}:
            assert sum(1 for row in part.rows if row.test_id == test_id) == sum(1 for row in whole.rows if row.test_id == test_id)
    fixed = plan_for(tmp_path, OWN_REPEATS, repeat=2, test_repeats=False)  # as `--confirm` reruns plan
    assert (fixed.total_rows, fixed.repeat) == (8, 2)


def test_a_repeating_test_turns_the_cache_off(tmp_path: Path, openai_env: LLMServer) -> None:
    openai_env.on_chat("France", "Paris")
    config = ASKING.format(repeat=3)
    for _ in range(2):
        code, rows, err = eval_rows(tmp_path, config, "--cache-dir", str(tmp_path / "cache"))
        assert code == 0, err
        assert [r["response"]["cached"] for r in rows] == [False] * 3
    assert len(openai_env.requests_to("/v1/chat/completions")) == 6  # every repeat sampled again, both runs
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_confirm_reruns_ignore_a_tests_own_repeat(tmp_path: Path, openai_env: LLMServer) -> None:
    state = {"reply": "Paris"}
    openai_env.on_chat("France", lambda request: state["reply"])
    config = ASKING.format(repeat=2)
    code, _, err = eval_rows(tmp_path, config, "--no-cache", "--save-baseline", "base.json")
    assert code == 0, err
    state["reply"] = "Lyon"
    code, rows, err = eval_rows(tmp_path, config, "--no-cache", "--baseline", "base.json", "--confirm", "3")
    assert len(rows) == 2 and not any(r["success"] for r in rows)
    confirmations = json.loads((tmp_path / "out.json").read_text())["ciGrade"]["confirmations"]
    assert len(confirmations) == 3, "three reruns, as --confirm asked, not the test's own two"
    assert [c["repeatIndex"] for c in confirmations] == [0, 1, 2] and not any(c["success"] for c in confirmations)
    assert code == 0, err  # 2 of 2 passes, then 0 of 2 and 0 of 3 reruns: Fisher's one-sided p = 0.1, not evidence at 0.05


def test_a_bad_own_repeat_is_a_config_error(tmp_path: Path) -> None:
    code, rows, err = eval_rows(tmp_path, OWN_REPEATS.replace("options: {repeat: 3}", "options: {repeat: 0}"))
    assert code == 2 and not rows
    assert "promptfooconfig.yaml:" in err and "tests[0].options.repeat" in err and "Traceback" not in err


def test_the_row_limit_points_at_the_repeat_that_crosses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = OWN_REPEATS.replace("options: {repeat: 2, suffix", "options: {repeat: 500, suffix")
    code, rows, err = eval_rows(tmp_path, big)
    assert code == 0 and len(rows) == 505, err
    monkeypatch.setenv("CI_GRADE_MAX_ROWS", "100")
    result = run_cli("eval", "--no-progress", "-o", "out2.json", cwd=tmp_path)
    assert result.code == 2 and not (tmp_path / "out2.json").exists()
    assert "promptfooconfig.yaml:11 tests[2].options.repeat:" in result.err  # the test's line and the key's path
    assert "at least 505 rows (4 combinations of test, variables, prompt and provider, each test x its repeats)" in result.err
