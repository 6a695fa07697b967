"""Files named where promptfoo allows them: a test's `vars` as a path or a list of paths (merged in
order), tests files that name more tests files, and `$ref`s into other files."""

from __future__ import annotations

from pathlib import Path

from tests.assertion_runs import evaluate
from tests.conftest import run_cli, write


def outputs(rows: list[dict]) -> list[str]:
    return [row["response"]["output"] for row in rows]


def test_vars_from_paths_and_lists_of_paths_merge_later_over_earlier(tmp_path: Path) -> None:
    write(tmp_path / "data" / "base.yaml", "t: T1\nj: J1\n")
    write(tmp_path / "data" / "more.json", '{"j": "J2", "extra": 5}')
    rows = evaluate(
        tmp_path,
        """
prompts: ["T={{t}} J={{j}} X={{extra}}"]
providers: [echo]
tests:
  - vars: data/base.yaml
  - vars: [data/base.yaml, data/more.json]
  - vars: data/*.yaml
""",
    )
    assert outputs(rows) == ["T=T1 J=J1 X=", "T=T1 J=J2 X=5", "T=T1 J=J1 X="]


def test_a_tests_file_may_name_more_tests_files(tmp_path: Path) -> None:
    write(tmp_path / "tests.yaml", "- vars: {v: top}\n- one.yaml\n- file://more/two.yaml\n")
    write(tmp_path / "one.yaml", "vars: {v: one}\n")
    write(tmp_path / "more" / "two.yaml", "- vars: {v: two}\n- ../one.yaml\n")
    rows = evaluate(tmp_path, "prompts: ['{{v}}']\nproviders: [echo]\ntests: file://tests.yaml\n")
    assert outputs(rows) == ["top", "one", "two", "one"]


def test_tests_files_naming_each_other_in_a_loop_are_a_config_error(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "- vars: {v: a}\n- b.yaml\n")
    write(tmp_path / "b.yaml", "- a.yaml\n")
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{v}}']\nproviders: [echo]\ntests: file://a.yaml\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "Traceback" not in result.err
    assert "tests files name each other in a loop" in result.err


def test_refs_into_other_files_from_the_config_and_from_a_tests_file(tmp_path: Path) -> None:
    write(tmp_path / "defs.yaml", "checks:\n  polite: {type: icontains, value: please}\n")
    write(tmp_path / "tests.yaml", "- vars: {q: please help}\n  assert:\n    - $ref: defs.yaml#/checks/polite\n")
    rows = evaluate(
        tmp_path,
        """
prompts: ["{{q}}"]
providers: [echo]
tests:
  - vars: {q: Please wait}
    assert:
      - $ref: "defs.yaml#/checks/polite"
  - file://tests.yaml
""",
    )
    assert [row["success"] for row in rows] == [True, True]
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: x}\n    assert:\n      - $ref: defs.yaml#/checks/rude\n")
    result = run_cli("eval", "--no-progress", cwd=tmp_path)
    assert result.code == 2 and "$ref 'defs.yaml#/checks/rude' points at nothing in defs.yaml" in result.err


def test_csv_list_values_read_as_promptfoo_reads_them(tmp_path: Path) -> None:
    """An `__expected` list skips empty items (`zzz,` used to keep "", which every output
    contains: a false pass) and keeps quoted commas."""
    write(tmp_path / "tests.csv", 'a,__expected\nplain,"contains-any:zzz,"\n"say a, b","contains-all:""a, b"",say"\n')
    rows = evaluate(tmp_path, "prompts: ['{{a}}']\nproviders: [echo]\ntests: file://tests.csv\n")
    assert [row["success"] for row in rows] == [False, True]
    assert rows[1]["gradingResult"]["componentResults"][0]["assertion"]["value"] == ["a, b", "say"]
