"""Writing result files, the format chosen by extension, always atomically and redacted.

Results files (JSON, JSONL, YAML, CSV) keep at most `max_output_chars` characters of each row's
output (default 100,000; 0 keeps everything): the output is masked, then cut, and the row says
so (`response.metadata.outputCut`). A caller that passes `problems` gets the paths that could not
be written there instead of an error, so a full disk never changes a verdict.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import IO, Any

from ci_grade import redact
from ci_grade.atomic import write_atomic
from ci_grade.errors import InfrastructureError, UsageError
from ci_grade.gate.models import Comparison, GateNote
from ci_grade.report.junit import render_junit
from ci_grade.results.models import EvalRun, TestResult
from ci_grade.results.promptfoo import row_to_promptfoo, to_promptfoo
from ci_grade.results.spool import RowSpool
from ci_grade.safe_text import json_dumps, well_formed

SUPPORTED = (".json", ".jsonl", ".junit.xml", ".xml", ".md", ".csv", ".yaml", ".yml", ".txt")
DEFAULT_MAX_OUTPUT_CHARS = 100_000
_RESULTS_FILES = (".json", ".jsonl", ".csv", ".yaml", ".yml", ".txt")


class EncodedConfig:
    """A config for results files, encoded once with its secret-named fields masked (see
    `encode_config`), so a run need not keep the config's data for the writers. The text waits
    in an anonymous temporary file (gone with the process), in memory when no file takes it."""

    def __init__(self, parts: Callable[[], Iterable[str]]):
        """`parts()`: the text in parts (called again if the file fails)."""
        self._text = ""
        self._file: IO[bytes] | None = None
        try:
            self._file = tempfile.TemporaryFile(prefix="ci-grade-config-")  # noqa: SIM115 (open for the object's life)
            for part in parts():
                self._file.write(part.encode("utf-8", "surrogatepass"))
            self._file.flush()  # a full disk shows here, not when the text is read back
        except OSError:  # no temporary folder, a full disk
            if self._file is not None:
                with contextlib.suppress(OSError):  # closing flushes what the disk would not take
                    self._file.close()
            self._file = None
            self._text = "".join(parts())

    @property
    def text(self) -> str:
        if self._file is None:
            return self._text
        self._file.seek(0)
        return self._file.read().decode("utf-8", "surrogatepass")

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.text)
        return data


ConfigForOutput = dict[str, Any] | EncodedConfig | None
"""The config a results file records: data, already encoded, or none."""


def encode_config(config: dict[str, Any]) -> EncodedConfig:
    """`config` as results files hold it: secret-named fields masked now, known secrets masked
    again (with any learned since) when a file is written. Tests and scenarios are masked and
    encoded one at a time (a masked copy of a large config would briefly double it)."""
    redactor = redact.current()
    lists = {key: config[key] for key in ("tests", "scenarios") if isinstance(config.get(key), list)}
    shell = redactor.data({key: [] if key in lists else value for key, value in config.items()})

    def items(values: list[Any]) -> Iterator[str]:
        yield "["
        for index, item in enumerate(values):
            yield ("," if index else "") + _compact(redactor.data(item))
        yield "]"

    return EncodedConfig(lambda: _spliced(shell, (), iter(()), {key: items(values) for key, values in lists.items()}))


def _config_data(config: ConfigForOutput) -> dict[str, Any] | None:
    return config.data() if isinstance(config, EncodedConfig) else config


def output_kind(path: str | Path) -> str:
    name = str(path).lower()
    for suffix in SUPPORTED:
        if name.endswith(suffix):
            return suffix
    raise UsageError(f"cannot write {path}: unsupported output type (use one of {', '.join(SUPPORTED)})")


def check_outputs(paths: list[str]) -> None:
    """Reject unsupported output types (usage) and unwritable places (infrastructure) before running."""
    for path in paths:
        output_kind(path)
    for path in paths:
        check_writable(path)


def check_writable(path: str) -> None:
    """Exit 3 now if `path` could not be written: a folder, under a file, or in a read-only folder."""
    target = Path(path)
    if target.is_dir():
        raise InfrastructureError(f"cannot write {path}: it is a folder")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InfrastructureError(f"cannot write {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK):
        raise InfrastructureError(f"cannot write {path}: {folder} is not writable")


def capped(run: EvalRun, limit: int) -> EvalRun:
    """`run` with every row's output masked and cut to `limit` characters where it is longer
    (0: no limit); a cut output is text ending in a note, and its row records the sizes."""
    if limit <= 0:
        return run
    return run.model_copy(update={"results": [_capped_row(row, limit) for row in run.results]})


def _capped_row(row: TestResult, limit: int) -> TestResult:
    text = row.output if isinstance(row.output, str) else None if row.output is None else json_dumps(row.output, default=str)
    if text is None or len(text) <= limit:
        return row
    text = redact.current().text(text)
    note = f"… [output cut: {len(text) - limit:,} more characters]"
    metadata = {**row.response_metadata, "outputCut": {"keptChars": limit, "totalChars": len(text)}}
    return row.model_copy(update={"output": text[:limit] + note, "response_metadata": metadata})


def _row_texts(run: EvalRun, limit: int) -> Iterator[str]:
    """Each row's compact results JSON, outputs cut to `limit`: spooled rows as they were stored
    (read back and cut only where the output is longer), rows in memory encoded here."""
    rows = run.results
    if not isinstance(rows, RowSpool):
        for row in rows:
            yield _compact(row_to_promptfoo(_capped_row(row, limit) if limit > 0 else row))
        return
    for position, summary in enumerate(rows.summaries()):
        if 0 < limit < summary.output_chars:
            yield _compact(row_to_promptfoo(_capped_row(rows[position], limit)))
        else:
            yield rows.text(position)


def _compact(data: Any) -> str:
    return json_dumps(data, separators=(",", ":"), default=str)


def _json_parts(run: EvalRun, config: ConfigForOutput, limit: int) -> Iterator[str]:
    """The results JSON in parts, each masked, the rows streamed in one at a time: the same text
    as `to_promptfoo` encoded whole."""
    redactor = redact.current()
    shell = to_promptfoo(run, None, rows=False)
    encoded = {"config": (config if isinstance(config, EncodedConfig) else encode_config(config or {})).text}
    for part in _spliced(shell, ("results", "results"), _row_texts(run, limit), encoded):
        yield redactor.text(part)


def _spliced(data: dict[str, Any], path: tuple[str, ...], rows: Iterator[str], encoded: Mapping[str, str | Iterator[str]]) -> Iterator[str]:
    """`data` as compact JSON with the list at `path` made of the already encoded `rows`, and
    the top-level values in `encoded` as given (text, or text in parts)."""
    yield "{"
    for index, (key, value) in enumerate(data.items()):
        yield ("," if index else "") + _compact(key) + ":"
        if key in encoded:
            given = encoded[key]
            if isinstance(given, str):
                yield given
            else:
                yield from given
        elif not path or key != path[0]:
            yield _compact(value)
        elif len(path) > 1:
            yield from _spliced(value, path[1:], rows, {})
        else:
            yield "["
            for number, row in enumerate(rows):
                yield ("," if number else "") + row
            yield "]"
    yield "}"


def _jsonl_parts(run: EvalRun, limit: int) -> Iterator[str]:
    redactor = redact.current()
    for text in _row_texts(run, limit):
        yield redactor.text(json_dumps(json.loads(text), default=str) + "\n")


def render_parts(path: str | Path, run: EvalRun, config: ConfigForOutput, regressions: Mapping[str, GateNote] | None = None, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> Iterator[str]:
    """`render` in parts: results JSON and JSONL rows one at a time, other formats whole."""
    kind = output_kind(path)
    if kind == ".json":
        return _json_parts(run, config, max_output_chars)
    if kind == ".jsonl":
        return _jsonl_parts(run, max_output_chars)
    return iter([render(path, run, config, regressions, max_output_chars)])


def render(path: str | Path, run: EvalRun, config: ConfigForOutput, regressions: Mapping[str, GateNote] | None = None, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """The run in the format `path`'s extension names, secrets masked (results files with outputs cut to `max_output_chars`)."""
    kind = output_kind(path)
    if kind in (".json", ".jsonl"):
        return "".join(render_parts(path, run, config, regressions, max_output_chars))
    redactor = redact.current()
    if kind in _RESULTS_FILES:
        run = capped(run, max_output_chars)
    renderers: dict[str, Callable[[], str]] = {
        ".junit.xml": lambda: render_junit(run, regressions),
        ".xml": lambda: render_junit(run, regressions),
        ".md": lambda: redactor.text(markdown_table(run)),
        ".csv": lambda: well_formed(redactor.text(csv_table(run))),
        ".yaml": lambda: _yaml(redactor.data(to_promptfoo(run, _config_data(config)))),
        ".yml": lambda: _yaml(redactor.data(to_promptfoo(run, _config_data(config)))),
        ".txt": lambda: _yaml(redactor.data(to_promptfoo(run, _config_data(config)))),
    }
    return renderers[kind]()


def _write_all(texts: list[tuple[Path, Callable[[], str | Iterable[str]]]], problems: list[str] | None) -> list[Path]:
    """Write every file it can; failures go to `problems`, or are raised once naming them all."""
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


def write_outputs(
    paths: list[str],
    run: EvalRun,
    config: ConfigForOutput,
    regressions: Mapping[str, GateNote] | None = None,
    *,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    problems: list[str] | None = None,
) -> list[Path]:
    """Write every path it can (after trying them all, the failures are raised or put in `problems`)."""
    return _write_all([(Path(path), partial(render_parts, Path(path), run, config, regressions, max_output_chars)) for path in paths], problems)


def write_reports(
    paths: list[str],
    run: EvalRun,
    comparison: Comparison,
    title: str,
    *,
    config: ConfigForOutput = None,
    json_is_comparison: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    problems: list[str] | None = None,
) -> list[Path]:
    """`.md` gets the comparison report, `.json` the comparison itself when `json_is_comparison`;
    every other format is a results file, its JUnit marking regressions."""
    from ci_grade.report.markdown import render_markdown

    notes = comparison.gate_notes()

    def text(target: Path) -> str | Iterable[str]:
        if target.name.lower().endswith(".md"):
            return render_markdown(run, comparison, title=title, max_chars=1_000_000, max_bytes=1_000_000)
        if json_is_comparison and target.name.lower().endswith(".json"):
            return redact.text(json_dumps(comparison.model_dump(mode="json"), indent=2)) + "\n"
        return render_parts(target, run, config, notes, max_output_chars)

    return _write_all([(Path(path), partial(text, Path(path))) for path in paths], problems)


def _yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False, allow_unicode=True)


def markdown_table(run: EvalRun) -> str:
    """A plain Markdown table of every row; untrusted text is made inert (the PR report is elsewhere).
    A failing trajectory check adds the agent's steps to its row's reason."""
    from ci_grade.report.markdown_escape import Escaper
    from ci_grade.results.traces import trajectory_steps

    cell = Escaper().inline
    stats = run.stats
    title = f": {cell(run.info.description, 200)}" if run.info.description else ""
    lines = [
        f"# ci-grade results{title}",
        "",
        f"{stats.successes} passed, {stats.failures} failed, {stats.errors} errors ({stats.total} rows)",
        "",
        "| Status | Test | Prompt | Provider | Score | Reason |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    for row in run.results:
        status = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}[row.status]
        reason = row.error if row.status == "error" else ("" if row.status == "pass" else row.reason)
        steps = next((trajectory_steps(a.metadata) for a in row.failed_assertions() if a.metadata.get("trajectory")), [])
        shown = cell(reason, 200) + (f" (steps: {cell(' → '.join(steps[:12]), 400)})" if steps else "")
        lines.append(f"| {status} | {cell(row.name, 80)} | {cell(row.prompt.label, 60)} | {cell(row.provider.display, 40)} | {row.score:.2f} | {shown} |")
    return "\n".join(lines) + "\n"


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_text(value: Any) -> str:
    """A CSV cell for untrusted text; a leading formula character is quoted with `'` (OWASP),
    so a spreadsheet opening the file does not run a model's output as a formula."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_table(run: EvalRun) -> str:
    buffer = io.StringIO()
    variables = sorted({k for row in run.results for k in row.vars})
    writer = csv.writer(buffer)
    writer.writerow(["test_id", "description", *variables, "prompt", "provider", "status", "score", "reason", "output"])
    for row in run.results:
        values = [_csv_text(row.vars.get(k)) for k in variables]
        texts = [_csv_text(v) for v in (row.description, row.prompt.label, row.provider.display)]
        writer.writerow([row.test_id, texts[0], *values, texts[1], texts[2], row.status.upper(), f"{row.score:.4f}", _csv_text(row.error or row.reason), _csv_text(row.output)])
    return buffer.getvalue()
