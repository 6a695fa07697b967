"""A corpus of broken configs: each exits 2 with one line naming file, line and key path.

Each folder under tests/fixtures/malformed/ holds a config (and the files it points at), an
optional `args` file (extra command-line arguments, one per line) and `expected`: the exact
error line after `ci-grade: error: `.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_cli_process

CORPUS = Path(__file__).parent / "fixtures" / "malformed"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
# Run as real processes too: start-up, argument parsing and YAML errors, where a traceback would show.
PROCESS_CASES = ("yaml_syntax_error", "bad_var_flag", "template_syntax_error", "missing_prompt_file", "bad_csv_threshold")


def _prepare(case: str, tmp_path: Path) -> tuple[Path, list[str], str]:
    folder = tmp_path / case
    shutil.copytree(CORPUS / case, folder, ignore=shutil.ignore_patterns("expected", "args"))
    args_file = CORPUS / case / "args"
    args = args_file.read_text().splitlines() if args_file.exists() else []
    expected = (CORPUS / case / "expected").read_text().strip()
    return folder, args, expected


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 20
    for case in CASES:
        assert (CORPUS / case / "expected").is_file(), case


@pytest.mark.parametrize("case", CASES)
def test_malformed_config_gives_one_line(case: str, tmp_path: Path) -> None:
    folder, args, expected = _prepare(case, tmp_path)
    result = run_cli("eval", "--no-progress", *args, cwd=folder)
    assert result.code == 2, result.err
    lines = result.err.splitlines()
    assert lines == [f"ci-grade: error: {expected}"]
    assert "Traceback" not in result.err + result.out
    assert not (folder / "out.json").exists()


@pytest.mark.parametrize("case", PROCESS_CASES)
def test_malformed_config_in_a_real_process(case: str, tmp_path: Path) -> None:
    folder, args, expected = _prepare(case, tmp_path)
    result = run_cli_process("eval", "--no-progress", *args, cwd=folder)
    assert result.code == 2
    assert result.err.splitlines() == [f"ci-grade: error: {expected}"]
    assert "Traceback" not in result.err


def test_expected_messages_name_file_line_and_key() -> None:
    """The corpus itself: the structural errors carry `file:line key.path:`."""
    example = (CORPUS / "threshold_not_number" / "expected").read_text().strip()
    assert example == "promptfooconfig.yaml:14 tests[2].assert[0].threshold: expected a number, got 'high'"
    located = [case for case in CASES if (CORPUS / case / "expected").read_text().split(" ", 1)[0].count(":") == 1]
    assert len(located) >= 20
