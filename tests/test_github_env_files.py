"""Step outputs (heredoc delimiters) and the job summary (size limit)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from ci_grade.github import env_files
from ci_grade.github.env_files import append_summary, fit_bytes, format_output, write_outputs
from tests.github_helpers import parse_outputs


def test_outputs_survive_newlines_and_delimiter_lookalikes(tmp_path: Path) -> None:
    path = tmp_path / "output.txt"
    path.write_text("earlier=value\n", encoding="utf-8")
    hostile = "line one\nghadelimiter_x\nEOF\nname=injected\nlast line"
    write_outputs(path, {"plain": "0.8750", "multi": hostile, "empty": "", "url": "https://x.example/a=b"})
    assert parse_outputs(path) == {"earlier": "value", "plain": "0.8750", "multi": hostile, "empty": "", "url": "https://x.example/a=b"}


def test_a_delimiter_found_in_the_value_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = uuid.UUID(int=1), uuid.UUID(int=2)
    values = iter([first, second])
    monkeypatch.setattr(env_files.uuid, "uuid4", lambda: next(values))
    text = format_output("report", f"x\nghadelimiter_{first}\ny")
    delimiter = re.match(r"report<<(.+)\n", text)[1]
    assert delimiter == f"ghadelimiter_{second}"
    assert text.endswith(f"\n{delimiter}\n")


def test_output_names_are_checked() -> None:
    with pytest.raises(ValueError):
        format_output("bad\nname", "x")
    with pytest.raises(ValueError):
        format_output("a<<b", "x")


def test_summary_appends_and_respects_the_step_limit(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("# from an earlier tool\n", encoding="utf-8")
    assert append_summary(path, "## ci-grade\n\nall good") is False
    assert path.read_text(encoding="utf-8") == "# from an earlier tool\n## ci-grade\n\nall good\n"
    big = "".join(f"- row {i} ✓ with some text\n" for i in range(60_000))
    assert append_summary(path, big) is True
    data = path.read_bytes()
    assert len(data) <= env_files.SUMMARY_LIMIT_BYTES
    text = data.decode("utf-8")  # never cut inside a character
    assert text.startswith("# from an earlier tool\n## ci-grade")
    assert text.endswith("see the results files._\n")
    assert "✓ with some text\n\n_The rest of this report was cut" in text  # cut at a line boundary


def test_fit_bytes_counts_utf8_bytes() -> None:
    text = "é" * 100
    fitted = fit_bytes(text, 51, "!")
    assert fitted == "é" * 25 + "!"
    assert len(fitted.encode("utf-8")) <= 51
    assert fit_bytes("short", 100, "!") == "short"
