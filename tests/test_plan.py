"""The planner: defaultTest merging, var expansion, filters, repeats and stable test ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ci_grade.plan.build import Plan
from tests.conftest import write
from tests.plan_helpers import eval_rows, plan_for
from tests.servers.llm_server import LLMServer

# -- vars ----------------------------------------------------------------------------------------


def test_string_arrays_expand_into_the_cartesian_product(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        """
        prompts: ['{{language}} {{input}}']
        providers: [echo]
        tests:
          - vars: {language: [fr, de], input: [a, b], fixed: 1}
        """,
    )
    assert [row.vars for row in plan.rows] == [
        {"language": "fr", "input": "a", "fixed": 1},
        {"language": "fr", "input": "b", "fixed": 1},
        {"language": "de", "input": "a", "fixed": 1},
        {"language": "de", "input": "b", "fixed": 1},
    ]
    assert len({row.test_id for row in plan.rows}) == 4


def test_non_string_arrays_and_disabled_expansion_stay_whole(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        """
        prompts: ['{{ nums | join("+") }} {{ items | length }} {{ tags }}']
        providers: [echo]
        tests:
          - vars: {nums: [1, 2, 3], items: [{a: 1}, {a: 2}], tags: [x, y]}
            options: {disableVarExpansion: true}
          - vars: {nums: [1, 2], items: [], tags: [x, y]}
        """,
    )
    assert [row.vars for row in plan.rows] == [
        {"nums": [1, 2, 3], "items": [{"a": 1}, {"a": 2}], "tags": ["x", "y"]},
        {"nums": [1, 2], "items": [], "tags": "x"},
        {"nums": [1, 2], "items": [], "tags": "y"},
    ]


def test_glob_vars_fan_out_with_relative_identities(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "a.md", "alpha")
    write(tmp_path / "docs" / "b.md", "beta")
    config = """
        prompts: ['Summarise: {{doc}}']
        providers: [echo]
        tests:
          - vars: {doc: file://docs/*.md}
        """
    plan = plan_for(tmp_path, config)
    assert [row.vars["doc"] for row in plan.rows] == ["alpha", "beta"]
    # the same checkout in another folder (a CI runner) gives the same ids
    write(tmp_path / "elsewhere" / "docs" / "a.md", "alpha")
    write(tmp_path / "elsewhere" / "docs" / "b.md", "beta")
    moved = plan_for(tmp_path / "elsewhere", config)
    assert [r.test_id for r in moved.rows] == [r.test_id for r in plan.rows]


def test_vars_may_reference_other_vars(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        """
        prompts: ['{{item}}']
        providers: [echo]
        tests:
          - vars: {topic: bikes, item: 'tweet about {{topic}} in {{ count }} words', count: 5, other: '{{unknown}}'}
        """,
    )
    assert plan.rows[0].vars == {"topic": "bikes", "item": "tweet about bikes in 5 words", "count": 5, "other": "{{unknown}}"}


# -- defaultTest ---------------------------------------------------------------------------------


def test_default_test_merge_rules(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        """
        prompts: ['{{a}} {{b}}']
        providers: [echo, {id: echo, label: second}]
        defaultTest:
          vars: {a: default-a, b: default-b}
          options: {prefix: 'P:', suffix: ':S', transform: output.trim()}
          metadata: {team: core, tier: 1}
          threshold: 0.5
          provider: {id: echo, label: default-provider}
          assert:
            - {type: contains, value: default}
        tests:
          - vars: {b: own-b}
            options: {suffix: ':own'}
            metadata: {tier: 2}
            assert: [{type: icontains, value: own}]
          - threshold: 0.9
            provider: echo
            options: {disableDefaultAsserts: true}
            assert: [{type: contains, value: x}]
          - {metadata: {}}
        """,
    )
    first, second, third = (plan.rows[0].test, plan.rows[2].test, plan.rows[4].test)
    assert [a.type for a in first.assert_ or []] == ["contains", "icontains"]
    assert first.vars == {"a": "default-a", "b": "own-b"}
    assert (first.options.prefix, first.options.suffix, first.options.transform) == ("P:", ":own", "output.trim()")
    assert first.metadata == {"team": "core", "tier": 2}
    assert first.threshold == 0.5 and first.provider == {"id": "echo", "label": "default-provider"}
    assert [a.type for a in second.assert_ or []] == ["contains"] and second.assert_[0].value == "x"
    assert second.threshold == 0.9 and second.provider == "echo"
    assert [a.value for a in third.assert_ or []] == ["default"] and third.vars == {"a": "default-a", "b": "default-b"}
    assert len(plan.rows) == 6


def test_prefix_suffix_and_provider_output(tmp_path: Path, openai_env: LLMServer) -> None:
    code, rows, err = eval_rows(
        tmp_path,
        """
        prompts: ['{{q}}']
        providers: [openai:gpt-4o-mini]
        tests:
          - vars: {q: question}
            options: {prefix: 'Context. ', suffix: ' Answer briefly.'}
          - vars: {q: precomputed}
            providerOutput: 'The answer is 42'
            assert: [{type: contains, value: '42'}]
        """,
    )
    assert code == 0, err
    (request,) = openai_env.requests_to("/v1/chat/completions")
    assert request.json["messages"] == [{"role": "user", "content": "Context. question Answer briefly."}]
    assert rows[1]["response"]["output"] == "The answer is 42"
    assert rows[1]["gradingResult"]["componentResults"][0]["pass"] is True


def test_a_config_without_tests_runs_the_prompts_once(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, "prompts: [a, b]\nproviders: [echo]\ndefaultTest: {vars: {x: 1}}\n")
    assert [(row.prompt.raw, row.vars) for row in plan.rows] == [("a", {"x": 1}), ("b", {"x": 1})]


# -- command-line selection ----------------------------------------------------------------------


SELECTION = """
prompts: ['{{who}} {{ mood }}']
providers: [echo]
defaultTest:
  vars: {mood: calm}
tests:
  - description: alpha greeting
    vars: {who: alpha}
    metadata: {area: billing, tags: [fast, smoke]}
  - description: beta greeting
    vars: {who: beta, mood: tense}
    metadata: {area: search}
  - description: gamma farewell
    vars: {who: gamma}
    metadata: {area: billing, tags: [slow]}
"""


def test_var_flag_sets_vars_for_every_test_but_tests_win(tmp_path: Path) -> None:
    code, rows, err = eval_rows(tmp_path, SELECTION, "--var", "mood=happy", "--var", "extra=a=b")
    assert code == 0, err
    assert [r["response"]["output"] for r in rows] == ["alpha happy", "beta tense", "gamma happy"]
    assert rows[0]["vars"]["extra"] == "a=b"


def test_filter_flags(tmp_path: Path) -> None:
    def whos(*args: str) -> list[str]:
        code, rows, err = eval_rows(tmp_path, SELECTION, *args)
        assert code == 0, err
        return [r["vars"]["who"] for r in rows]

    assert whos("--filter-pattern", "greeting$") == ["alpha", "beta"]
    assert whos("--filter-pattern", "^(beta|gamma)") == ["beta", "gamma"]
    assert whos("--filter-first-n", "2") == ["alpha", "beta"]
    assert whos("-n", "1") == ["alpha"]
    assert whos("--filter-metadata", "area=billing") == ["alpha", "gamma"]
    assert whos("--filter-metadata", "area=billing", "--filter-metadata", "tags=slow") == ["gamma"]
    assert whos("--filter-metadata", "tags=fast") == ["alpha"]
    # promptfoo's rule: the value's text holds the filter's, and a repeated key must match each time
    assert whos("--filter-metadata", "area=bill") == ["alpha", "gamma"]
    assert whos("--filter-metadata", "tags=slow", "--filter-metadata", "tags=s") == ["gamma"]


def test_repeat_keeps_the_test_id(tmp_path: Path) -> None:
    code, rows, err = eval_rows(tmp_path, SELECTION, "--repeat", "3")
    assert code == 0, err
    assert len(rows) == 9
    by_id: dict[str, list[int]] = {}
    for row in rows:
        by_id.setdefault(row["testId"], []).append(row["repeatIndex"])
    assert sorted(by_id.values()) == [[0, 1, 2]] * 3
    assert len({row["id"] for row in rows}) == 9


def test_max_concurrency_flag(tmp_path: Path, openai_env: LLMServer) -> None:
    import threading
    import time

    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def slow(request: dict[str, Any]) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.03)
        with lock:
            state["now"] -= 1
        return "ok"

    openai_env.on_chat(None, slow)
    config = "prompts: ['{{n}}']\nproviders: [openai:gpt-4o-mini]\ntests: [{vars: {n: ['1', '2', '3', '4']}}]\nevaluateOptions: {maxConcurrency: 4}\n"
    code, rows, err = eval_rows(tmp_path, config, "-j", "1")
    assert code == 0, err
    assert len(rows) == 4 and state["peak"] == 1


# -- stable ids ----------------------------------------------------------------------------------


IDS = """
prompts: ['P1 {{x}}', {label: second, raw: 'P2 {{x}}'}]
providers: [echo, {id: echo, label: other}]
tests:
  - description: described
    vars: {x: 1}
  - vars: {x: 2}
  - vars: {x: 3}
"""


def _ids(plan: Plan) -> dict[tuple[str, str, str], str]:
    return {(json.dumps(row.vars, sort_keys=True), row.prompt.label, row.provider.label or row.provider.id): row.test_id for row in plan.rows}


def test_ids_are_stable_across_runs_and_reordering(tmp_path: Path) -> None:
    first = _ids(plan_for(tmp_path / "a", IDS))
    again = _ids(plan_for(tmp_path / "b", IDS))
    assert first == again
    reordered = IDS.replace("  - vars: {x: 2}\n  - vars: {x: 3}\n", "  - vars: {x: 3}\n  - vars: {x: 2}\n")
    assert reordered != IDS
    assert _ids(plan_for(tmp_path / "c", reordered)) == first
    assert len(set(first.values())) == 12  # 3 tests x 2 prompts x 2 providers, all different


def test_id_follows_the_description_not_the_vars(tmp_path: Path) -> None:
    base = plan_for(tmp_path / "a", IDS)
    edited = plan_for(tmp_path / "b", IDS.replace("description: described\n    vars: {x: 1}", "description: described\n    vars: {x: 100}"))
    assert base.rows[0].test_id == edited.rows[0].test_id
    assert base.rows[1].test_id == edited.rows[1].test_id


def test_inline_prompt_ids_follow_position_not_text(tmp_path: Path) -> None:
    """Editing a prompt's text (the usual PR) keeps its tests' ids, so the baseline matches."""
    base = plan_for(tmp_path / "a", IDS)
    edited = plan_for(tmp_path / "b", IDS.replace("'P1 {{x}}'", "'P1, improved: {{x}}'"))
    assert [r.test_id for r in base.rows] == [r.test_id for r in edited.rows]


def test_duplicate_tests_get_distinct_deterministic_ids(tmp_path: Path) -> None:
    config = """
        prompts: ['{{x}}']
        providers: [echo]
        tests:
          - description: same name
            vars: {x: a}
          - description: same name
            vars: {x: b}
          - vars: {x: c}
          - vars: {x: c}
        """
    plan = plan_for(tmp_path / "a", config)
    ids = [row.test_id for row in plan.rows]
    assert len(set(ids)) == 4
    assert ids[3] == ids[2] + "-2"
    swapped = config.replace("vars: {x: a}", "vars: {x: TMP}").replace("vars: {x: b}", "vars: {x: a}").replace("vars: {x: TMP}", "vars: {x: b}")
    other = plan_for(tmp_path / "b", swapped)
    assert {row.vars["x"]: row.test_id for row in other.rows[:2]} == {row.vars["x"]: row.test_id for row in plan.rows[:2]}
    assert plan_for(tmp_path / "c", config).rows[0].test_id == ids[0]


def test_tests_sharing_a_description_keep_their_ids_when_their_assertions_change(tmp_path: Path) -> None:
    config = """
        prompts: ['{{x}}']
        providers: [echo]
        tests:
          - description: shared
            vars: {x: [a, b]}
            assert: [{type: contains, value: a}]
          - description: shared
            vars: {x: c}
          - description: twin
            vars: {x: d}
          - description: twin
            vars: {x: d}
            assert: [{type: equals, value: d}]
        """
    ids = [row.test_id for row in plan_for(tmp_path / "a", config).rows]
    assert len(set(ids)) == 5
    edited = config.replace("value: a}", "value: b}").replace("vars: {x: c}", "vars: {x: c}\n            providerOutput: c")
    assert [row.test_id for row in plan_for(tmp_path / "b", edited).rows][:3] == ids[:3]  # told apart by their variables
    twins = [row.test_id for row in plan_for(tmp_path / "c", config.replace("value: d}", "value: D}")).rows]
    assert twins[:3] == ids[:3] and twins[3:] != ids[3:]  # the same variables: told apart by the whole test


@pytest.mark.parametrize("flag", ["--repeat", "-j"])
def test_bad_numbers_are_usage_errors(tmp_path: Path, flag: str) -> None:
    code, rows, err = eval_rows(tmp_path, SELECTION, flag, "0")
    assert code == 2 and rows == []
    assert err.strip() == f"ci-grade: error: {'--repeat' if flag == '--repeat' else '--max-concurrency'} must be at least 1"
