"""What the output formats write: every config's part, its run, its comparison once judged, its config."""

from __future__ import annotations

from dataclasses import dataclass

from ci_grade.gate.models import Comparison, GateNote
from ci_grade.report.outputs import DEFAULT_MAX_OUTPUT_CHARS, ConfigForOutput
from ci_grade.results.models import EvalRun


@dataclass
class Part:
    """One config's results as the writers see them: its run, its comparison once judged, its config."""

    name: str
    run: EvalRun
    comparison: Comparison | None = None
    config: ConfigForOutput = None

    def notes(self) -> dict[str, GateNote]:
        return self.comparison.gate_notes() if self.comparison else {}


@dataclass
class Document:
    """What is written: every config's part (one, except for a merge of several configs)."""

    parts: list[Part]
    title: str = "ci-grade"
    gate_report: bool = False
    """`.md` is the gate's report (a baseline was given); otherwise a plain table of the rows."""
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    """Characters of each row's output kept in results files and the HTML report (0: all)."""

    @property
    def only(self) -> Part:
        """The part of a one-config format (the registry hands it one part at a time)."""
        (part,) = self.parts
        return part

    @property
    def several(self) -> bool:
        return len(self.parts) > 1
