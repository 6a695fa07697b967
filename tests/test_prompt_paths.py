"""Prompts written as bare paths (`prompts: [prompts/a.txt]`) read their files, as in promptfoo.

Expected rows are promptfoo 0.123.1's on the same configs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli, write


def rows(folder: Path, prompts: str) -> tuple[int, list[tuple[str, str]], str]:
    write(folder / "a.txt", "Say {{x}}")
    write(folder / "sub" / "b.txt", "Sub {{x}}")
    write(folder / "promptfooconfig.yaml", f"prompts: {prompts}\nproviders: [echo]\ntests: [{{vars: {{x: hi}}}}]\n")
    result = run_cli("eval", "-o", "out.json", "--no-progress", cwd=folder)
    out = folder / "out.json"
    found = [(r["prompt"]["raw"], r["prompt"]["label"]) for r in json.loads(out.read_text())["results"]["results"]] if out.exists() else []
    return result.code, found, result.err


@pytest.mark.parametrize(
    ("prompts", "expected"),
    [
        ('["a.txt"]', [("Say hi", "a.txt: Say {{x}}")]),
        ('["sub/b.txt"]', [("Sub hi", "sub/b.txt: Sub {{x}}")]),
        ('["sub/*.txt"]', [("Sub hi", "sub/b.txt: Sub {{x}}")]),
        ('["file://a.txt"]', [("Say hi", "a.txt: Say {{x}}")]),
        ("[{id: a.txt, label: greeting}]", [("Say hi", "greeting")]),
        ('["Say {{x}} now"]', [("Say hi now", "Say {{x}} now")]),
        ('["What is 2.5?"]', [("What is 2.5?", "What is 2.5?")]),
    ],
)
def test_bare_paths_read_files_and_text_stays_text(tmp_path: Path, prompts: str, expected: list[tuple[str, str]]) -> None:
    code, found, err = rows(tmp_path, prompts)
    assert code == 0, err
    assert found == expected


def test_a_bare_path_and_its_file_uri_are_the_same_test(tmp_path: Path) -> None:
    rows(tmp_path, '["a.txt"]')
    bare = json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]["testId"]
    rows(tmp_path, '["file://a.txt"]')
    assert json.loads((tmp_path / "out.json").read_text())["results"]["results"][0]["testId"] == bare


def test_a_missing_prompt_file_is_a_config_error(tmp_path: Path) -> None:
    code, found, err = rows(tmp_path, '["missing.txt"]')
    assert code == 2 and not found
    assert err == "ci-grade: error: promptfooconfig.yaml:1 prompts[0]: file not found: missing.txt\n"


def test_a_sentence_with_a_slash_stays_text(tmp_path: Path) -> None:
    # promptfoo 0.123.1 refuses this config ("There are no prompts in ..."); it is a prompt
    code, found, err = rows(tmp_path, '["Compare A/B for {{x}}"]')
    assert code == 0, err
    assert found == [("Compare A/B for hi", "Compare A/B for {{x}}")]
