"""Files ci-grade writes get the mode a plain `open` gives (0666 less the umask), still atomically:
a JUnit file is readable by a test reporter running as another user when the umask allows it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_grade.atomic import write_atomic
from tests.conftest import run_cli, write


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path: Path, umask: None, mask: int, expected: int) -> None:
    os.umask(mask)
    target = tmp_path / "out" / "results.xml"
    write_atomic(target, "<testsuites/>")
    assert _mode(target) == expected
    write_atomic(target, ["<testsuites>", "</testsuites>"])  # replaced whole, same mode
    assert target.read_text() == "<testsuites></testsuites>"
    assert _mode(target) == expected
    assert [p.name for p in target.parent.iterdir()] == ["results.xml"]  # no temporary file left


def test_a_part_that_fails_leaves_the_old_file(tmp_path: Path, umask: None) -> None:
    target = tmp_path / "results.json"
    write_atomic(target, "old")

    def parts() -> Iterator[str]:
        yield "new"
        raise RuntimeError("cannot render")

    with pytest.raises(RuntimeError):
        write_atomic(target, parts())
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_eval_outputs_are_readable_by_others_under_umask_022(tmp_path: Path, umask: None) -> None:
    write(tmp_path / "promptfooconfig.yaml", "prompts: ['hi {{ name }}']\nproviders: [echo]\ntests:\n  - vars: {name: a}\n")
    result = run_cli("eval", "--no-progress", "-o", "results.xml", "-o", "out.json", "-o", "report.md", cwd=tmp_path)
    assert result.code == 0, result.err
    assert {name: _mode(tmp_path / name) for name in ("results.xml", "out.json", "report.md")} == dict.fromkeys(("results.xml", "out.json", "report.md"), 0o644)
