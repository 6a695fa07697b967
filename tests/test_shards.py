"""Shards: the split of a plan (whole groups, balanced, deterministic) and its fingerprint."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ci_grade.config.loader import load_config
from ci_grade.errors import UsageError
from ci_grade.grading import registry
from ci_grade.plan.build import Plan, PlanOptions, build_plan
from ci_grade.plan.filters import EvalFilters
from ci_grade.plan.shard import Shard, deal, parse_shard
from tests.conftest import run_cli, write

CONFIG = """
prompts: ['A {{topic}}', 'B {{topic}}']
providers:
  - {id: echo, label: alpha}
  - {id: echo, label: beta}
tests:
  - description: fruits
    vars: {topic: [apple, pear, plum, fig, kiwi]}
    assert: [{type: contains, value: A}]
  - description: best
    vars: {topic: tea}
    assert: [{type: contains, value: tea}]
  - description: alpha only
    providers: [alpha]
    vars: {topic: [one, two, three]}
    assert: [{type: contains, value: o}]
  - vars: {topic: data.txt}
  - vars: {topic: file://data.txt}
    metadata: {kind: file}
  - description: same name
    vars: {topic: first}
  - description: same name
    vars: {topic: second}
"""


def load(folder: Path, config: str = CONFIG):
    write(folder / "promptfooconfig.yaml", config)
    if not (folder / "data.txt").exists():
        write(folder / "data.txt", "from a file\n")
    return load_config([folder / "promptfooconfig.yaml"], registry.vocabulary(), cwd=folder)


def plan(folder: Path, config: str = CONFIG, **options) -> Plan:
    return build_plan(load(folder, config), PlanOptions(**options))


def keys(p: Plan) -> list[tuple[str, int]]:
    return [(row.test_id, row.repeat_index) for row in p.rows]


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "abc", "2", "1/3/4", "-1/3", ""])
def test_bad_shard_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


def test_shard_specs_read_with_spaces() -> None:
    assert parse_shard(" 2 / 4 ") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"


def test_dealing_is_balanced_to_within_one_group() -> None:
    rng = random.Random(7)
    for _ in range(200):
        count = rng.randint(1, 9)
        sizes = [rng.choice([1, 2, 4, 6, 12]) for _ in range(rng.randint(0, 60))]
        keys_ = [f"group-{i}-{rng.random()}" for i in range(len(sizes))]
        assigned = deal(keys_, sizes, count)
        loads = [sum(size for size, shard in zip(sizes, assigned, strict=True) if shard == k) for k in range(1, count + 1)]
        assert sum(loads) == sum(sizes)
        assert max(loads) - min(loads) <= max(sizes, default=0)
        assert deal(keys_, sizes, count) == assigned  # deterministic


def test_dealing_order_comes_from_the_keys_not_the_input_order() -> None:
    keys_ = [f"k{i}" for i in range(20)]
    sizes = [1] * 20
    forward = dict(zip(keys_, deal(keys_, sizes, 3), strict=True))
    backward = dict(zip(keys_[::-1], deal(keys_[::-1], sizes, 3), strict=True))
    assert forward == backward


def test_shards_partition_the_plan_by_whole_groups(tmp_path: Path) -> None:
    whole = plan(tmp_path, repeat=2)
    shards = [plan(tmp_path, repeat=2, shard=Shard(k, 3)) for k in (1, 2, 3)]
    assert sorted(k for s in shards for k in keys(s)) == sorted(keys(whole))
    assert len(keys(whole)) == len(set(keys(whole))) == whole.total_rows == 2 * (4 * 13 - 2 * 3)
    owner: dict[tuple[Any, str], int] = {}
    for index, part in enumerate(shards):
        for row in part.rows:
            group = (row.location, json.dumps(row.vars, sort_keys=True))  # one test x vars: every prompt, provider and repeat
            assert owner.setdefault(group, index) == index
    assert len(owner) == whole.groups == 13
    sizes = [len(s.rows) for s in shards]
    assert max(sizes) - min(sizes) <= 8  # the largest group: 2 prompts x 2 providers x 2 repeats
    for part in shards:
        assert (part.groups, part.total_rows, part.fingerprint) == (whole.groups, whole.total_rows, whole.fingerprint)
        by_index = {row.index: row for row in whole.rows}
        assert all(by_index[row.index].test_id == row.test_id and by_index[row.index].test_index == row.test_index for row in part.rows)


def test_every_shard_computes_the_same_split(tmp_path: Path) -> None:
    first = [keys(plan(tmp_path, shard=Shard(k, 4))) for k in (1, 2, 3, 4)]
    again = [keys(plan(tmp_path, shard=Shard(k, 4))) for k in (1, 2, 3, 4)]
    assert first == again and all(first)


def test_more_shards_than_groups_leaves_some_empty(tmp_path: Path) -> None:
    parts = [plan(tmp_path, filters=EvalFilters(pattern="^best$"), shard=Shard(k, 3)) for k in (1, 2, 3)]
    assert sorted(len(p.rows) for p in parts) == [0, 0, 4]


def test_filters_apply_before_sharding(tmp_path: Path) -> None:
    whole = plan(tmp_path, filters=EvalFilters(pattern="fruits|alpha"))
    parts = [plan(tmp_path, filters=EvalFilters(pattern="fruits|alpha"), shard=Shard(k, 2)) for k in (1, 2)]
    assert sorted(k for p in parts for k in keys(p)) == sorted(keys(whole))
    assert {row.test.description for p in parts for row in p.rows} == {"fruits", "alpha only"}
    assert whole.fingerprint != plan(tmp_path).fingerprint


def test_fingerprint_is_the_same_in_another_checkout(tmp_path: Path) -> None:
    here = plan(tmp_path / "one")
    shutil.copytree(tmp_path / "one", tmp_path / "elsewhere" / "deeper")
    there = build_plan(load_config([tmp_path / "elsewhere" / "deeper" / "promptfooconfig.yaml"], registry.vocabulary(), cwd=tmp_path))
    assert here.fingerprint == there.fingerprint and len(here.fingerprint) == 12


def test_fingerprint_changes_with_what_the_plan_runs(tmp_path: Path) -> None:
    base = plan(tmp_path).fingerprint
    assert plan(tmp_path, repeat=2).fingerprint != base
    assert plan(tmp_path, filters=EvalFilters(first_n=2)).fingerprint != base
    assert plan(tmp_path, cli_vars={"extra": "1"}).fingerprint != base
    assert plan(tmp_path, grader="openai:gpt-4.1").fingerprint != base
    assert plan(tmp_path, CONFIG.replace("value: tea", "value: coffee")).fingerprint != base
    (tmp_path / "data.txt").write_text("changed\n")  # a variable's file, not in the config itself
    assert plan(tmp_path).fingerprint != base
    (tmp_path / "data.txt").write_text("from a file\n")
    assert plan(tmp_path).fingerprint == base


def test_eval_shard_writes_a_part_and_exits_0_whatever_its_tests_did(tmp_path: Path) -> None:
    load(tmp_path, CONFIG + "  - {description: fails, vars: {topic: z}, assert: [{type: contains, value: nope}]}\n")
    codes, rows, infos = [], [], []
    for k in (1, 2):
        result = run_cli("eval", "--no-progress", "--shard", f"{k}/2", "-o", f"s{k}.json", "-o", f"s{k}.md", cwd=tmp_path)
        codes.append(result.code)
        assert (tmp_path / f"s{k}.md").read_text(encoding="utf-8").startswith("# ci-grade results")  # a shard's rows, no verdict
        data = json.loads((tmp_path / f"s{k}.json").read_text())
        rows += data["results"]["results"]
        infos.append(data["ciGrade"]["info"])
        assert f"shard {k}/2:" in result.out
    assert codes == [0, 0]
    assert any(not row["success"] for row in rows)
    full = run_cli("eval", "--no-progress", "-o", "full.json", cwd=tmp_path)
    assert full.code == 1
    whole = json.loads((tmp_path / "full.json").read_text())
    assert Counter(r["id"] for r in rows) == Counter(r["id"] for r in whole["results"]["results"])
    assert [i["shard"] for i in infos] == [{"index": k, "count": 2, "groups": 14, "rows": len(rows)} for k in (1, 2)]
    assert {i["plan_hash"] for i in infos} == {whole["ciGrade"]["info"]["plan_hash"]}
    assert whole["ciGrade"]["info"]["shard"] is None
    assert {i["config_name"] for i in infos} == {"promptfooconfig.yaml"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "3/2", "-o", "s.json"], "--shard '3/2'"),
        (["--shard", "1/2"], "write them to a .json file"),
        (["--shard", "1/2", "-o", "s.csv"], "write them to a .json file"),
        (["--shard", "1/2", "-o", "s.json", "--baseline", "b.json"], "give --baseline and --save-baseline to `ci-grade merge`"),
        (["--shard", "1/2", "-o", "s.json", "--save-baseline", "b.json"], "give --baseline and --save-baseline to `ci-grade merge`"),
    ],
)
def test_eval_shard_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    load(tmp_path)
    result = run_cli("eval", "--no-progress", *args, cwd=tmp_path)
    assert result.code == 2 and message in result.err, result.err
    assert not (tmp_path / "s.json").exists()
