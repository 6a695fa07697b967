"""Writing result files, the format chosen by extension, always atomically and redacted."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ci_grade.errors import InfrastructureError, UsageError
from ci_grade.redact import Redactor
from ci_grade.report.junit import render_junit
from ci_grade.results.models import EvalRun
from ci_grade.results.promptfoo import row_to_promptfoo, to_promptfoo

SUPPORTED = (".json", ".jsonl", ".junit.xml", ".xml", ".md", ".csv", ".yaml", ".yml", ".txt")


def output_kind(path: str | Path) -> str:
    name = str(path).lower()
    for suffix in SUPPORTED:
        if name.endswith(suffix):
            return suffix
    raise UsageError(f"cannot write {path}: unsupported output type (use one of {', '.join(SUPPORTED)})")


def check_outputs(paths: list[str]) -> None:
    """Reject unsupported output paths before running anything."""
    for path in paths:
        output_kind(path)


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InfrastructureError(f"cannot write {path}: {exc.strerror}") from exc


def render(path: str | Path, run: EvalRun, config: dict[str, Any] | None, redactor: Redactor, regressions: Mapping[str, str] | None = None) -> str:
    kind = output_kind(path)
    renderers: dict[str, Callable[[], str]] = {
        ".json": lambda: json.dumps(redactor.data(to_promptfoo(run, config)), ensure_ascii=False, indent=2, default=str),
        ".jsonl": lambda: "".join(json.dumps(redactor.data(row_to_promptfoo(r)), ensure_ascii=False, default=str) + "\n" for r in run.results),
        ".junit.xml": lambda: render_junit(run, redactor, regressions),
        ".xml": lambda: render_junit(run, redactor, regressions),
        ".md": lambda: redactor.text(markdown_table(run)),
        ".csv": lambda: redactor.text(csv_table(run)),
        ".yaml": lambda: _yaml(redactor.data(to_promptfoo(run, config))),
        ".yml": lambda: _yaml(redactor.data(to_promptfoo(run, config))),
        ".txt": lambda: _yaml(redactor.data(to_promptfoo(run, config))),
    }
    return renderers[kind]()


def write_outputs(paths: list[str], run: EvalRun, config: dict[str, Any] | None, redactor: Redactor, regressions: Mapping[str, str] | None = None) -> list[Path]:
    written = []
    for path in paths:
        target = Path(path)
        write_atomic(target, render(target, run, config, redactor, regressions))
        written.append(target)
    return written


def _yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False, allow_unicode=True)


def _cell(text: Any, limit: int = 200) -> str:
    value = " ".join(str(text if text is not None else "").split())
    value = value if len(value) <= limit else value[: limit - 1] + "…"
    return value.replace("|", "\\|")


def markdown_table(run: EvalRun) -> str:
    """A plain Markdown table of every row (the PR report is rendered elsewhere)."""
    stats = run.stats
    lines = [
        f"# ci-grade results{': ' + run.info.description if run.info.description else ''}",
        "",
        f"{stats.successes} passed, {stats.failures} failed, {stats.errors} errors ({stats.total} rows)",
        "",
        "| Status | Test | Prompt | Provider | Score | Reason |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    for row in run.results:
        status = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}[row.status]
        reason = row.error if row.status == "error" else ("" if row.status == "pass" else row.reason)
        lines.append(f"| {status} | {_cell(row.name, 80)} | {_cell(row.prompt.label, 60)} | {_cell(row.provider.display, 40)} | {row.score:.2f} | {_cell(reason)} |")
    return "\n".join(lines) + "\n"


def csv_table(run: EvalRun) -> str:
    buffer = io.StringIO()
    variables = sorted({k for row in run.results for k in row.vars})
    writer = csv.writer(buffer)
    writer.writerow(["test_id", "description", *variables, "prompt", "provider", "status", "score", "reason", "output"])
    for row in run.results:
        output = row.output if isinstance(row.output, str) else json.dumps(row.output, ensure_ascii=False, default=str)
        values = [row.vars.get(k) for k in variables]
        values = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str) for v in values]
        writer.writerow([row.test_id, row.description or "", *values, row.prompt.label, row.provider.display, row.status.upper(), f"{row.score:.4f}", row.error or row.reason, output])
    return buffer.getvalue()
