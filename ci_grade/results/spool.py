"""A run's finished rows on disk (`RowSpool`), so memory does not grow with the number of rows.

Each row is stored once, when it finishes (rows finish in any order), as its row of promptfoo's
results JSON: the text a results file holds, with secrets already masked by the writer that puts
it (the run's collector, `run/collect.py`). A small `RowSummary` per row stays in memory. Readers
get the rows in plan order, as often as they like: as `TestResult`s (read back one at a time) or,
for results files, as the stored text. Rows reach the file in batches of about 64 KB, one system
call each; a read writes what is pending first. Rows the file cannot take (a full disk, a file
size limit, no temporary folder) are kept in memory instead: a full disk never changes a verdict.

The file is an anonymous temporary file (`tempfile.TemporaryFile`: on Linux it is created
without a name, or unlinked at once), so it disappears when the spool is closed or collected, or
when the process ends, however it ends; nothing is left behind in the temporary folder.
"""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from typing import IO, overload

from ci_grade.results.models import StoredRows, TestResult
from ci_grade.results.promptfoo import row_from_promptfoo
from ci_grade.results.summary import RowSummary

BATCH_BYTES = 1 << 16
"""Rows are written once this many bytes of them are pending (and before any read)."""


class RowSpool(StoredRows):
    """`size` rows in plan positions 0..size-1, each put exactly once."""

    def __init__(self, size: int):
        self._fd = -1
        try:
            self._file: IO[bytes] | None = tempfile.TemporaryFile(prefix="ci-grade-rows-")  # noqa: SIM115 (open for the spool's life)
            self._fd = self._file.fileno()
        except OSError:  # no usable temporary folder: the rows stay in memory
            self._file = None
        self._offsets = array("q", [-1]) * size
        self._lengths = array("q", [0]) * size
        self._summaries: list[RowSummary | None] = [None] * size
        self._held: dict[int, str] = {}
        self._pending = bytearray()
        self._pending_rows: list[tuple[int, str]] = []
        self._written = 0  # where the file ends (and the pending rows begin)
        self._end = 0

    def put(self, position: int, text: str, summary: RowSummary) -> None:
        """Store the row at `position`: its results-JSON text (masked) and its summary."""
        if self.has(position):
            raise ValueError(f"row {position} is already stored")
        data = text.encode("utf-8")
        self._offsets[position] = self._end
        self._lengths[position] = len(data)
        self._end += len(data)
        self._pending += data
        self._pending_rows.append((position, text))
        self._summaries[position] = summary
        if len(self._pending) >= BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        """Write the pending rows; those the file cannot take stay in memory."""
        if not self._pending_rows:
            return
        data = memoryview(self._pending)
        try:
            written = os.pwrite(self._fd, data, self._written)
            while written < len(data):
                written += os.pwrite(self._fd, data[written:], self._written + written)
        except OSError:
            for position, text in self._pending_rows:
                self._held[position] = text
                self._offsets[position] = -1
            self._end = self._written
        else:
            self._written += len(data)
        data.release()
        self._pending = bytearray()
        self._pending_rows.clear()

    def has(self, position: int) -> bool:
        return self._summaries[position] is not None

    def text(self, position: int) -> str:
        """The stored results-JSON text of the row at `position`."""
        self._flush()
        if position in self._held:
            return self._held[position]
        offset = self._offsets[position]
        if offset < 0:
            raise LookupError(f"row {position} was never stored")
        return os.pread(self._fd, self._lengths[position], offset).decode("utf-8")

    def texts(self) -> Iterator[str]:
        """Every row's stored text, in plan order."""
        for position in range(len(self)):
            yield self.text(position)

    def summaries(self) -> Sequence[RowSummary]:
        missing = [position for position, summary in enumerate(self._summaries) if summary is None]
        if missing:
            raise LookupError(f"{len(missing)} rows were never stored (first: {missing[0]})")
        return self._summaries  # type: ignore[return-value]

    def close(self) -> None:
        """Delete the file now (it is deleted anyway when the spool is collected or the process ends)."""
        if self._file is not None:
            self._file.close()

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> TestResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[TestResult]: ...

    def __getitem__(self, index: int | slice) -> TestResult | list[TestResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("row index out of range")
        return self._read(position)

    def __iter__(self) -> Iterator[TestResult]:
        for position in range(len(self)):
            yield self._read(position)

    def _read(self, position: int) -> TestResult:
        row = row_from_promptfoo(json.loads(self.text(position)))
        summary = self._summaries[position]
        if summary is not None:
            row.latency_ms = summary.latency_ms  # results files round it to 3 decimals
        return row
