"""Annotations for failing, erroring and regressed tests, placed on the line that defines the test.

One annotation per test definition (a test run against several prompts or providers is one
annotation listing each), regressions first. Errors when the gate failed, warnings when the
check passes anyway. Beyond GitHub's per-step cap the last slot says how many more there are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ci_grade import redact
from ci_grade.gate.models import GateNote
from ci_grade.github.workflow_commands import Level, WorkflowCommands
from ci_grade.results.models import EvalRun, TestResult

_MAX_MESSAGE = 2000
_MAX_TITLE = 200
_RANK = {"regression": 0, "error": 1, "failure": 2}


@dataclass
class Finding:
    kind: str
    name: str
    file: str | None
    line: int | None
    lines: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int:
        """Regressions first, then errors, then failures."""
        return _RANK[self.kind]

    @property
    def title(self) -> str:
        label = {"regression": "regression", "error": "error", "failure": "failed"}[self.kind]
        title = f"ci-grade {label}: {self.name}"
        return title if len(title) <= _MAX_TITLE else title[: _MAX_TITLE - 1] + "…"

    @property
    def message(self) -> str:
        text = "\n".join(dict.fromkeys(self.lines))
        return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def workspace_path(file: str, cwd: Path, workspace: Path) -> str | None:
    """`file` (relative to `cwd`, or absolute) relative to the workspace; None if outside it."""
    try:
        return (cwd / file).resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return None


def _row_line(row: TestResult, gate_note: GateNote | None) -> str:
    """One row's line of an annotation, secrets masked (before the message is cut to size)."""
    where = f"[{redact.text(row.provider.display)}] {' '.join(redact.text(row.prompt.label).split())[:60]}"
    if row.status == "error":
        return redact.text(f"{where}: error: {row.error or row.reason}")
    note = gate_note.text if gate_note else ""
    if row.status == "fail":
        return redact.text(f"{where}: {row.reason}" + (f" ({note})" if note else ""))
    return redact.text(f"{where}: {note}")


def findings(run: EvalRun, notes: Mapping[str, GateNote], cwd: Path, workspace: Path) -> list[Finding]:
    """What to annotate, most important first."""
    found: dict[tuple[str | None, int | None, str], Finding] = {}
    for row in run.results:
        gate_note = notes.get(row.test_id)
        note = gate_note if gate_note is not None and gate_note.gating else None
        if row.status == "pass" and not note:
            continue
        kind = "regression" if note else ("error" if row.status == "error" else "failure")
        file = workspace_path(row.location.file, cwd, workspace) if row.location else None
        line = row.location.line if row.location and file else None
        key = (file, line, row.name) if file else (None, None, row.test_id)
        finding = found.setdefault(key, Finding(kind, " ".join(redact.text(row.name).split()), file, line))
        if _RANK[kind] < _RANK[finding.kind]:
            finding.kind = kind
        finding.lines.append(_row_line(row, gate_note))
    return sorted(found.values(), key=lambda f: _RANK[f.kind])


def annotate(commands: WorkflowCommands, items: list[Finding], level: Level) -> int:
    """Emit annotations within the cap; returns how many tests were annotated."""
    slots = commands.remaining(level)
    shown = items if len(items) <= slots else items[: max(0, slots - 1)]
    for item in shown:
        commands.annotate(level, item.message, file=item.file, line=item.line, title=item.title)
    hidden = len(items) - len(shown)
    if hidden:
        commands.annotate(level, f"{hidden} more failing or regressed tests are not annotated (GitHub shows at most {commands.limit} per step); the job summary lists them all.", title="ci-grade: more findings")
    return len(shown)
