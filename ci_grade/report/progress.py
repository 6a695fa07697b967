"""Progress of a run on stderr: a live status line on a terminal, a line per 10% in CI logs.

Both show rows done, pass/fail/error counts, cost so far, elapsed time and an ETA. The line holds
only numbers and fixed words, never test names, outputs or reasons, so it can neither leak a
secret nor carry a workflow command into an Actions log.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from ci_grade.report.console import format_cost, format_duration
from ci_grade.results.models import TestResult

_CLEAR_LINE = "\r\x1b[2K"


class Progress:
    """Called with each finished row; use as a context manager around the run.

    On a terminal the status line is redrawn as rows finish and every `tick` seconds in between
    (so elapsed time and ETA move during slow calls). Elsewhere a line is written when the run
    starts and each time another tenth of the rows is done.
    """

    def __init__(self, stream: TextIO | None = None, enabled: bool = True, total: int = 0,
                 clock: Callable[[], float] = time.monotonic, tick: float = 1.0):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.total = total
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.cost = 0.0
        self._clock = clock
        self._started = clock()
        self._tick = tick
        self._last_decile = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._ticker: threading.Thread | None = None
        self._line_open = False

    def __enter__(self) -> Progress:
        self._started = self._clock()
        if not self.enabled or not self.total:
            return self
        if self.tty:
            with self._lock:
                self._draw()
            self._ticker = threading.Thread(target=self._redraw_until_stopped, name="ci-grade-progress", daemon=True)
            self._ticker.start()
        else:
            self._write(f"  running {self.total} row{'' if self.total == 1 else 's'}\n")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stopped.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self._line_open:  # an interrupted run: end the status line before anything else is printed
                self._write("\n")
                self._line_open = False

    def __call__(self, row: TestResult, done: int, total: int) -> None:
        if not self.enabled or total == 0:
            return
        with self._lock:
            self.done, self.total = done, total
            self.counts[row.status] += 1
            self.cost += row.total_cost
            if self.tty:
                self._draw()
                return
            decile = done * 10 // total
            if decile != self._last_decile or done == total:
                self._last_decile = decile
                self._write(f"  {self.status()}\n")

    def status(self) -> str:
        """`12/40 rows done (30%)  10 passed, 1 failed, 1 error  cost $0.0123  elapsed 4.2s  ETA 9.8s`."""
        elapsed = self._clock() - self._started
        percent = self.done * 100 // self.total if self.total else 0
        errors = self.counts["error"]
        parts = [
            f"{self.done}/{self.total} rows done ({percent}%)",
            f"{self.counts['pass']} passed, {self.counts['fail']} failed, {errors} error{'' if errors == 1 else 's'}",
            f"cost {format_cost(self.cost)}",
            f"elapsed {format_duration(elapsed * 1000)}",
        ]
        if self.done < self.total:
            eta = elapsed / self.done * (self.total - self.done) if self.done else None
            parts.append(f"ETA {format_duration(eta * 1000)}" if eta is not None else "ETA -")
        return "  ".join(parts)

    def _width(self) -> int:
        """COLUMNS, else the width of the terminal the line is drawn on, else 100."""
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 100
        except (AttributeError, OSError, ValueError):
            return 100

    def _draw(self) -> None:
        """Redraw the status line (caller holds the lock), cut to the terminal's width."""
        line = f"  {self.status()}"[: max(self._width() - 1, 20)]
        finished = self.done >= self.total
        self._write(_CLEAR_LINE + line + ("\n" if finished else ""))
        self._line_open = not finished

    def _redraw_until_stopped(self) -> None:
        while not self._stopped.wait(self._tick):
            with self._lock:
                if self._line_open:
                    self._draw()

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
