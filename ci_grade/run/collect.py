"""Where the run's rows go once they are final: into a `RowSpool` on disk, one at a time.

A finished row is written as its row of promptfoo's results JSON, secrets masked with the
command's redactor (the spool is a sink: `redact.current()`), and dropped from memory; its
`RowSummary` stays. Results files are later written from that text (masked again with every
secret known by then), and every other reader gets the rows back from it, one at a time.
"""

from __future__ import annotations

from ci_grade import redact
from ci_grade.results.models import TestResult
from ci_grade.results.promptfoo import row_to_promptfoo
from ci_grade.results.spool import RowSpool
from ci_grade.results.summary import RowSummary
from ci_grade.safe_text import json_dumps


def encode_row(row: TestResult) -> str:
    """The row as results files hold it (compact JSON), secrets masked."""
    return redact.current().text(json_dumps(row_to_promptfoo(row), separators=(",", ":"), default=str))


def output_chars(row: TestResult) -> int:
    """The length of the row's output as results files cap it (text, or data as JSON)."""
    output = row.output
    if output is None:
        return 0
    return len(output if isinstance(output, str) else json_dumps(output, default=str))


def store(spool: RowSpool, position: int, row: TestResult) -> None:
    """Put a final row into the spool at its plan position."""
    spool.put(position, encode_row(row), RowSummary.of(row, output_chars(row)))
