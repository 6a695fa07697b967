"""The action's finished results: every config's section and the files written for them."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ci_grade.report.sections import Section


class Graded(NamedTuple):
    """Finished results (one section per config), compared, with the files written for them."""

    sections: list[Section]
    results_paths: list[Path]
    junit_path: Path
    html_path: Path
    warnings: list[str]
    """About the run: a missing baseline, result files that could not be written."""

    @property
    def gate_failed(self) -> bool:
        return any(s.comparison.gate_failed for s in self.sections)
