"""One registry of output formats: the file a path names is written by the entry its extension picks.

An entry names its extensions, its writer, whether it reports the gate's judgement (`compare`,
which has a comparison and no run config, writes only those, its `.json` being the comparison
itself) and whether one file holds several configs (`merge` writes the others once per config).
`eval`, `merge`, `compare` and the action all write through `write_files`: every path it can,
atomically and masked; a caller that passes `problems` gets the paths that could not be written
there instead of an error, so a full disk never changes a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ci_grade import redact
from ci_grade.atomic import write_atomic
from ci_grade.errors import InfrastructureError, UsageError
from ci_grade.report import outputs
from ci_grade.report.document import Document
from ci_grade.safe_text import json_dumps

Writer = Callable[[Document], "str | Iterable[str]"]


@dataclass(frozen=True)
class OutputFormat:
    name: str
    suffixes: tuple[str, ...]
    write: Writer = field(repr=False)
    reports_gate: bool
    """It shows the gate's judgement (verdict, regressions), so `compare` can write it."""
    several: bool
    """One file holds several configs; otherwise a merge of several writes one file per config."""


def _junit(doc: Document) -> str:
    from ci_grade.report.junit import render_junit_sections

    runs = [part.run for part in doc.parts]
    return render_junit_sections(
        [(part.name if doc.several else "", part.run, part.notes()) for part in doc.parts],
        name=(runs[0].info.description if len(runs) == 1 else None) or "ci-grade",
        duration_ms=max(run.stats.duration_ms for run in runs),
    )


def _markdown(doc: Document) -> str:
    if doc.gate_report:
        from ci_grade.report.sections import Section, render_report

        sections = [Section(part.name, part.run, part.comparison) for part in doc.parts if part.comparison is not None]
        if len(sections) == len(doc.parts):
            return render_report(sections, title=doc.title, max_chars=1_000_000, max_bytes=1_000_000)
    return redact.text("\n".join(outputs.markdown_table(part.run) for part in doc.parts))


def _html(doc: Document) -> str:
    from ci_grade.report.html import render_html

    return render_html(doc)


def _comparison_json(doc: Document) -> str:
    comparison = doc.only.comparison
    assert comparison is not None, "compare writes its comparison"
    return redact.text(json_dumps(comparison.model_dump(mode="json"), indent=2)) + "\n"


FORMATS = (
    OutputFormat("results JSON", (".json",), lambda doc: outputs.json_parts(doc.only.run, doc.only.config, doc.max_output_chars), reports_gate=False, several=False),
    OutputFormat("results JSON lines", (".jsonl",), lambda doc: outputs.jsonl_parts(doc.only.run, doc.max_output_chars), reports_gate=False, several=False),
    OutputFormat("JUnit XML", (".junit.xml", ".xml"), _junit, reports_gate=True, several=True),
    OutputFormat("Markdown", (".md",), _markdown, reports_gate=True, several=True),
    OutputFormat("HTML report", (".html",), _html, reports_gate=True, several=True),
    OutputFormat("CSV", (".csv",), lambda doc: outputs.csv_text(doc.only.run, doc.max_output_chars), reports_gate=False, several=False),
    OutputFormat("results YAML", (".yaml", ".yml", ".txt"), lambda doc: outputs.yaml_text(doc.only.run, doc.only.config, doc.max_output_chars), reports_gate=False, several=False),
)
"""What `eval` and `merge` write (and the action, through its results folder and the config's outputPath)."""

REPORTS = (*(f for f in FORMATS if f.reports_gate), OutputFormat("comparison JSON", (".json",), _comparison_json, reports_gate=True, several=False))
"""What `compare` writes."""


def format_of(path: str | Path, formats: tuple[OutputFormat, ...] = FORMATS) -> OutputFormat:
    """The entry for `path` by its extension (the longest that matches); a usage error otherwise."""
    name = str(path).lower()
    matches = [(len(suffix), entry) for entry in formats for suffix in entry.suffixes if name.endswith(suffix)]
    if not matches:
        names = ", ".join(suffix for entry in formats for suffix in entry.suffixes)
        raise UsageError(f"cannot write {path}: unsupported output type (use one of {names})")
    return max(matches, key=lambda match: match[0])[1]


def check_outputs(paths: list[str], formats: tuple[OutputFormat, ...] = FORMATS) -> None:
    """Reject unsupported output types (usage) and unwritable places (infrastructure) before running."""
    for path in paths:
        format_of(path, formats)
    for path in paths:
        outputs.check_writable(path)


def write_files(
    paths: list[str],
    doc: Document,
    *,
    formats: tuple[OutputFormat, ...] = FORMATS,
    problems: list[str] | None = None,
    per_config: Callable[[str, int], str] | None = None,
) -> list[Path]:
    """Write every path it can (after trying them all, the failures are raised or put in
    `problems`). A one-config format gets a file per part, at `per_config(path, index)`."""
    texts: list[tuple[Path, Callable[[], str | Iterable[str]]]] = []
    for path in paths:
        entry = format_of(path, formats)
        if entry.several:
            texts.append((Path(path), partial(entry.write, doc)))
            continue
        for index, part in enumerate(doc.parts):
            target = Path(per_config(path, index) if per_config else path)
            texts.append((target, partial(entry.write, replace(doc, parts=[part]))))
    written, failed = [], []
    for target, text in texts:
        try:
            write_atomic(target, text())
        except InfrastructureError as exc:
            failed.append(str(exc))
            continue
        written.append(target)
    if failed and problems is None:
        raise InfrastructureError("; ".join(failed))
    if problems is not None:
        problems.extend(failed)
    return written
