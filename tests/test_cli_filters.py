"""promptfoo's `--filter-*`, `--prompt-prefix` and `--prompt-suffix` flags, and their `commandLineOptions` keys.

Expected rows come from promptfoo 0.123.1 run on the same configs with the same flags.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ci_grade.config.command_line import parse_range
from ci_grade.errors import UsageError
from ci_grade.plan.filters import seeded_random
from tests.conftest import run_cli, write
from tests.servers.llm_server import LLMServer

FIXTURES = Path(__file__).parent / "fixtures" / "promptfoo-results"

TWELVE = "\n".join(
    [
        "prompts:",
        "  - {id: p1, label: greet, raw: 'Hello {{n}}'}",
        "  - {id: p2, label: bye, raw: 'Bye {{n}}'}",
        "providers: [echo]",
        "tests:",
        *(f"  - {{description: t{i}, vars: {{n: '{i}'}}, assert: [{{type: contains, value: '{i}'}}]}}" for i in range(12)),
    ]
)


def rows_of(folder: Path, config: str | None, *args: str, expect: int = 0) -> list[tuple[Any, ...]]:
    if config is not None:
        write(folder / "promptfooconfig.yaml", config)
    result = run_cli("eval", "--no-progress", "-o", "out.json", *args, cwd=folder)
    assert result.code == expect, result.err
    rows = json.loads((folder / "out.json").read_text())["results"]["results"]
    return [(r["testIdx"], r["vars"]["n"], r["promptIdx"], r["prompt"]["raw"]) for r in rows]


def test_promptfoos_seeded_generator_step_for_step() -> None:
    # JavaScript's numbers from promptfoo's createSeededRandom, printed by Node for these seeds
    expected = {
        42: [0.3077305785845965, 0.3676118436269462, 0.23133554426021874, 0.01758907549083233, 0.009130497695878148],
        -7: [0.050912341102957726, 0.07146202330477536, 0.975431623402983, 0.15491087920963764, 0.9174583277199417],
        9007199254740991: [0.44020250742323697, 0.8622099056374282, 0.8289391375146806, 0.5205095438286662, 0.6341362288221717],
    }
    for seed, numbers in expected.items():
        draw = seeded_random(seed)
        assert [draw() for _ in numbers] == numbers


def test_a_seeded_sample_draws_the_tests_promptfoo_draws(tmp_path: Path) -> None:
    rows = rows_of(tmp_path, TWELVE, "--filter-sample", "4", "--filter-sample-seed", "42")
    assert [(idx, n, col) for idx, n, col, _ in rows] == [
        (0, "11", 0), (0, "11", 1), (1, "6", 0), (1, "6", 1), (2, "10", 0), (2, "10", 1), (3, "7", 0), (3, "7", 1),
    ]
    unseeded = rows_of(tmp_path, None, "--filter-sample", "5")
    assert len({n for _, n, _, _ in unseeded}) == 5


def test_range_and_prompt_filters(tmp_path: Path) -> None:
    assert rows_of(tmp_path, TWELVE, "--filter-range", "3:6", "--filter-prompts", "bye") == [
        (0, "3", 0, "Bye 3"), (1, "4", 0, "Bye 4"), (2, "5", 0, "Bye 5"),
    ]
    assert [n for _, n, col, _ in rows_of(tmp_path, None, "--filter-range", "10:") if col == 0] == ["10", "11"]
    assert [n for _, n, col, _ in rows_of(tmp_path, None, "--filter-range", ":2", "-n", "1") if col == 0] == ["0"]
    assert [n for _, n, col, _ in rows_of(tmp_path, None, "--filter-range", "5:5", expect=1)] == []  # no tests ran


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3-6", "--filter-range must be specified in start:end format using zero-based indices, got: 3-6"),
        (":", "--filter-range must be specified in start:end format using zero-based indices, got: :"),
        ("1:2:3", "--filter-range must be specified in start:end format using zero-based indices, got: 1:2:3"),
        ("-1:2", "--filter-range must be specified in start:end format using zero-based indices, got: -1:2"),
        ("6:3", "--filter-range start must be less than or equal to end, got: 6:3"),
    ],
)
def test_bad_ranges_exit_2_with_promptfoos_message(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match="^" + message.replace("-", "\\-").replace("(", "\\(") + "$"):
        parse_range(text)
    write(tmp_path / "promptfooconfig.yaml", TWELVE)
    result = run_cli("eval", "--no-progress", "-o", "out.json", f"--filter-range={text}", cwd=tmp_path)
    assert result.code == 2 and message in result.err and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(("flag", "value"), [("-n", "0"), ("-n", "-1"), ("--filter-sample", "0")])
def test_counts_of_tests_below_one_exit_2(tmp_path: Path, flag: str, value: str) -> None:
    # promptfoo: "Too small: expected number to be >0" (-n -1 would slice off the last test)
    write(tmp_path / "promptfooconfig.yaml", TWELVE)
    result = run_cli("eval", "--no-progress", "-o", "out.json", flag, value, cwd=tmp_path)
    assert result.code == 2 and "must be at least 1" in result.err and not (tmp_path / "out.json").exists()


def test_a_prompt_filter_that_matches_nothing_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "promptfooconfig.yaml", TWELVE)
    result = run_cli("eval", "--no-progress", "-o", "out.json", "--filter-prompts", "^nothing$", cwd=tmp_path)
    assert result.code == 2 and "--filter-prompts '^nothing$' matches no prompt (prompts are ['greet', 'bye'])" in result.err


def test_prompt_prefix_and_suffix_and_a_tests_own_win(tmp_path: Path) -> None:
    config = TWELVE.replace("  - {description: t1,", "  - {options: {prefix: 'OWN '}, description: t1,")
    rows = rows_of(tmp_path, config, "-n", "2", "--prompt-prefix", "PRE ", "--prompt-suffix", " SUF")
    assert [raw for *_, raw in rows] == ["PRE Hello 0 SUF", "PRE Bye 0 SUF", "OWN Hello 1 SUF", "OWN Bye 1 SUF"]


def test_filter_failing_reads_a_results_file_promptfoo_wrote(tmp_path: Path) -> None:
    for name in ("promptfooconfig.yaml", "promptfoo-results.json"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    # promptfoo 0.123.1 reruns tests 2 and 3 whole (test 2 failed on one prompt only): 4 rows
    rows = rows_of(tmp_path, None, "--filter-failing", "promptfoo-results.json", expect=1)
    assert [(n, col) for _, n, col, _ in rows] == [("2", 0), ("2", 1), ("3", 0), ("3", 1)]
    assert [n for _, n, _, _ in rows_of(tmp_path, None, "--filter-failing-only", "promptfoo-results.json", expect=1)] == ["2", "2", "3", "3"]
    result = run_cli("eval", "--no-progress", "-o", "out.json", "--filter-errors-only", "promptfoo-results.json", cwd=tmp_path)
    assert "warning: --filter-errors-only promptfoo-results.json keeps no test: the file holds no errored rows" in result.err
    assert json.loads((tmp_path / "out.json").read_text())["results"]["results"] == []


BOOM = """
def call_api(prompt, options, context):
    if prompt.endswith("3"):
        return {"error": "the service fell over"}
    return {"output": prompt}
"""


def test_filter_failing_matches_promptfoos_rows_by_variables_as_written(tmp_path: Path, openai_env: LLMServer) -> None:
    # promptfoo 0.123.1 records `openai:chat:X` as `openai:X` and file variables as `file://...`,
    # and matches an earlier row to a test by its variables (the provider only when the test names its own)
    openai_env.on_chat("cats", "cats purr").on_chat("dogs", "dogs bark")
    write(tmp_path / "topics" / "dogs.txt", "dogs\n")
    write(tmp_path / "promptfooconfig.yaml", """
        prompts: ['Tell me about {{topic}}']
        providers: [openai:chat:gpt-4.1-mini]
        tests:
          - vars: {topic: cats}
            assert: [{type: contains, value: purr}]
          - vars: {topic: file://topics/dogs.txt}
            assert: [{type: contains, value: purr}]
        """)
    assert run_cli("eval", "--no-progress", "-o", "first.json", cwd=tmp_path).code == 1
    data = json.loads((tmp_path / "first.json").read_text())
    assert [row["vars"]["topic"] for row in data["results"]["results"]] == ["cats", "file://topics/dogs.txt"]  # as promptfoo writes them
    data.pop("ciGrade")
    for row in data["results"]["results"]:
        row.pop("testId")
        row["provider"]["id"] = "openai:gpt-4.1-mini"
    (tmp_path / "promptfoo.json").write_text(json.dumps(data))
    assert run_cli("eval", "--no-progress", "-o", "again.json", "--filter-failing", "promptfoo.json", cwd=tmp_path).code == 1
    assert [row["prompt"]["raw"] for row in json.loads((tmp_path / "again.json").read_text())["results"]["results"]] == ["Tell me about dogs"]


def test_filter_failing_kinds_on_ci_grades_own_results(tmp_path: Path) -> None:
    write(tmp_path / "boom.py", BOOM)
    config = TWELVE.replace("providers: [echo]", "providers: ['file://boom.py']").replace("value: '5'", "value: 'five'")
    rows_of(tmp_path, config, expect=1)  # t3 errors (both prompts), t5 fails (both prompts)
    (tmp_path / "first.json").write_text((tmp_path / "out.json").read_text())
    assert {n for _, n, _, _ in rows_of(tmp_path, None, "--filter-failing", "first.json", expect=1)} == {"3", "5"}
    assert {n for _, n, _, _ in rows_of(tmp_path, None, "--filter-failing-only", "first.json", expect=1)} == {"5"}
    assert {n for _, n, _, _ in rows_of(tmp_path, None, "--filter-errors-only", "first.json", expect=1)} == {"3"}
    both = rows_of(tmp_path, None, "--filter-failing-only", "first.json", "--filter-errors-only", "first.json", expect=1)
    assert [(idx, n) for idx, n, col, _ in both if col == 0] == [(3, "3"), (5, "5")]  # each test keeps its place in the whole plan


def test_a_filtered_run_is_its_own_plan_for_shards_and_retries(tmp_path: Path) -> None:
    config = TWELVE.replace("value: '5'", "value: 'five'").replace("value: '7'", "value: 'seven'").replace("value: '9'", "value: 'nine'")
    rows_of(tmp_path, config, expect=1)
    (tmp_path / "full.json").write_text((tmp_path / "out.json").read_text())
    whole = rows_of(tmp_path, None, "--filter-failing", "full.json", expect=1)
    (tmp_path / "failing.json").write_text((tmp_path / "out.json").read_text())
    for k in (1, 2):  # shards of the filtered plan merge into the filtered run's rows
        assert run_cli("eval", "--no-progress", "--filter-failing", "full.json", "--shard", f"{k}/2", "-o", f"s{k}.json", cwd=tmp_path).code == 0
    merged = run_cli("merge", "-o", "merged.json", "s1.json", "s2.json", cwd=tmp_path)
    assert merged.code == 1, merged.err
    rows = json.loads((tmp_path / "merged.json").read_text())["results"]["results"]
    assert sorted((r["testIdx"], r["vars"]["n"], r["promptIdx"]) for r in rows) == sorted((idx, n, col) for idx, n, col, _ in whole)
    shard = json.loads((tmp_path / "s1.json").read_text())
    assert shard["ciGrade"]["info"]["shard"]["rows"] == 6 and 0 < len(shard["results"]["results"]) < 6
    # the filtered run's results are another plan's: retrying them without the filter is refused
    refused = run_cli("eval", "--no-progress", "--retry-errors", "failing.json", "-o", "again.json", cwd=tmp_path)
    assert refused.code == 2 and "another config or plan" in refused.err
    assert run_cli("eval", "--no-progress", "--filter-failing", "full.json", "--retry-errors", "failing.json", "-o", "again.json", cwd=tmp_path).code == 1


def test_command_line_options_in_the_config_set_the_filters(tmp_path: Path) -> None:
    config = TWELVE + "\ncommandLineOptions: {filterSample: 4, filterSampleSeed: 42, filterPrompts: greet, promptPrefix: '> '}\n"
    assert rows_of(tmp_path, config) == [(0, "11", 0, "> Hello 11"), (1, "6", 0, "> Hello 6"), (2, "10", 0, "> Hello 10"), (3, "7", 0, "> Hello 7")]
    assert [n for _, n, _, _ in rows_of(tmp_path, config, "--filter-sample", "2")] == ["11", "6"]  # the flag wins
    ranged = TWELVE + "\ncommandLineOptions:\n  filterRange: '1:3'\n  filterMetadata: []\n"
    assert [n for _, n, col, _ in rows_of(tmp_path, ranged) if col == 0] == ["1", "2"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("filterSample: lots", "commandLineOptions.filterSample: must be a whole number of at least 1, got 'lots'"),
        ("filterFirstN: 0", "commandLineOptions.filterFirstN: must be a whole number of at least 1, got 0"),
        ("filterPrompts: [greet]", "commandLineOptions.filterPrompts: must be text, got ['greet']"),
        ("promptPrefix: 3", "commandLineOptions.promptPrefix: must be text, got 3"),
        ("filterMetadata: kind", "commandLineOptions.filterMetadata: must be key=value, got 'kind'"),
        ("filterSample: .inf", "commandLineOptions.filterSample: must be a whole number of at least 1, got inf"),
        ("filterRange: '5:2'", "commandLineOptions.filterRange: --filter-range start must be less than or equal to end, got: 5:2"),
    ],
)
def test_bad_command_line_options_name_file_line_and_key(tmp_path: Path, options: str, message: str) -> None:
    write(tmp_path / "promptfooconfig.yaml", TWELVE + f"\ncommandLineOptions:\n  {options}\n")
    result = run_cli("eval", "--no-progress", "-o", "out.json", cwd=tmp_path)
    assert result.code == 2, result.err
    assert f"promptfooconfig.yaml:19 {message}" in result.err and "Traceback" not in result.err


def test_table_cell_max_length_is_accepted_and_ignored(tmp_path: Path) -> None:
    assert len(rows_of(tmp_path, TWELVE, "-n", "1", "--table-cell-max-length", "20")) == 2
