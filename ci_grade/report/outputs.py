"""The results files' writers (JSON, JSONL, YAML, CSV) and the plain Markdown table; which one a
path gets is `report/formats.py`'s registry.

Results files (JSON, JSONL, YAML, CSV) keep at most `max_output_chars` characters of each row's
output (default 100,000; 0 keeps everything): the output is masked, then cut, and the row says
so (`response.metadata.outputCut`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ci_grade import redact
from ci_grade.errors import InfrastructureError
from ci_grade.results.models import EvalRun, TestResult
from ci_grade.results.promptfoo import row_to_promptfoo, split_trace, to_promptfoo
from ci_grade.results.spool import RowSpool
from ci_grade.safe_text import json_dumps, well_formed

DEFAULT_MAX_OUTPUT_CHARS = 100_000


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
    (read back and cut only where the output is longer), rows in memory encoded here. A traced
    row's trace is taken out of it (`_trace_texts` writes it)."""
    rows = run.results
    if not isinstance(rows, RowSpool):
        for row in rows:
            yield _untraced(row_to_promptfoo(_capped_row(row, limit) if limit > 0 else row))
        return
    for position, summary in enumerate(rows.summaries()):
        if 0 < limit < summary.output_chars:
            yield _untraced(row_to_promptfoo(_capped_row(rows[position], limit)))
        elif summary.traced:
            yield _untraced(json.loads(rows.text(position)))
        else:
            yield rows.text(position)


def _untraced(row: dict[str, Any]) -> str:
    split_trace(row)
    return _compact(row)


def _trace_texts(run: EvalRun) -> Iterator[str]:
    """The run's traces (compact JSON), for the top-level `traces`: a second pass over the rows."""
    rows = run.results
    if not isinstance(rows, RowSpool):
        yield from (_compact(trace) for row in rows if (trace := split_trace(row_to_promptfoo(row))) is not None)
        return
    for position, summary in enumerate(rows.summaries()):
        if summary.traced and (trace := split_trace(json.loads(rows.text(position)))) is not None:
            yield _compact(trace)


def _traced(run: EvalRun) -> bool:
    rows = run.results
    return any(s.traced for s in rows.summaries()) if isinstance(rows, RowSpool) else any(row.trace is not None for row in rows)


def _compact(data: Any) -> str:
    return json_dumps(data, separators=(",", ":"), default=str)


def json_parts(run: EvalRun, config: ConfigForOutput, limit: int) -> Iterator[str]:
    """The results JSON in parts, each masked, the rows streamed in one at a time: the same text
    as `to_promptfoo` encoded whole."""
    redactor = redact.current()
    shell = to_promptfoo(run, None, rows=False)
    encoded: dict[str, str | Iterator[str]] = {"config": (config if isinstance(config, EncodedConfig) else encode_config(config or {})).text}
    if _traced(run):
        shell["traces"] = []
        encoded["traces"] = _listed(_trace_texts(run))
    for part in _spliced(shell, ("results", "results"), _row_texts(run, limit), encoded):
        yield redactor.text(part)


def _listed(items: Iterator[str]) -> Iterator[str]:
    yield "["
    for number, item in enumerate(items):
        yield ("," if number else "") + item
    yield "]"


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


def jsonl_parts(run: EvalRun, limit: int) -> Iterator[str]:
    redactor = redact.current()
    for text in _row_texts(run, limit):
        yield redactor.text(json_dumps(json.loads(text), default=str) + "\n")


def yaml_text(run: EvalRun, config: ConfigForOutput, limit: int) -> str:
    """The results as YAML (promptfoo's `.yaml`, `.yml` and `.txt`), masked, outputs cut to `limit`."""
    return _yaml(redact.data(to_promptfoo(capped(run, limit), _config_data(config))))


def csv_text(run: EvalRun, limit: int) -> str:
    """The results as CSV, masked, outputs cut to `limit`."""
    return well_formed(redact.text(csv_table(capped(run, limit))))


def _yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False, allow_unicode=True)


def markdown_table(run: EvalRun) -> str:
    """A plain Markdown table of every row; untrusted text is made inert (the PR report is elsewhere).
    A failing trajectory check adds the agent's steps to its row's reason."""
    from ci_grade.report.markdown_escape import Escaper
    from ci_grade.report.wording import plural
    from ci_grade.results.traces import trajectory_steps

    cell = Escaper().inline
    stats = run.stats
    title = f": {cell(run.info.description, 200)}" if run.info.description else ""
    lines = [
        f"# ci-grade results{title}",
        "",
        f"{stats.successes} passed, {stats.failures} failed, {plural(stats.errors, 'error')} ({plural(stats.total, 'row')})",
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
