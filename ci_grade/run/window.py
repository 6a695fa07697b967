"""Start a run's rows in plan order, a bounded number at a time: `RowWindow`.

Creating every row's task up front costs a task and a coroutine frame per row for the whole
run (a few kilobytes each: a third of a gigabyte at 100,000 rows). The window creates a row's
task only when fewer than `size` rows are open (started, not finished), and creates the next
one as each row ends, so the tasks alive at once stay bounded whatever the plan's size.

A row that waits for earlier rows (a conversation's turn, `storeOutputAs`, `runSerially`: see
`conversation.py`) does not count while it waits (`waiting`), so rows that wait never hold back
rows that could run; they depend only on rows before them in plan order, which were started
before them, so the window never waits on a row it has not started. What each task ends with
is kept only when it is something (a row held back, a failure): `outcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

from ci_grade.providers.limiter import ADAPTIVE_CEILING

R = TypeVar("R")
T = TypeVar("T")
MIN_WINDOW = 256
ROWS_PER_SLOT = 4
"""Rows open per row allowed in flight, so a row is always ready when a slot frees up."""


def window_size(concurrency: int | None) -> int:
    """How many rows may be open at once for a run of `concurrency` rows in flight (None: adaptive)."""
    return max(MIN_WINDOW, ROWS_PER_SLOT * (concurrency or ADAPTIVE_CEILING))


class RowWindow(Generic[R, T]):
    """Tasks for `rows` (`start(position, row)`), made in order, at most `size` open at once. The
    caller may let a row go (None in `rows`) once its task has started."""

    def __init__(self, rows: Sequence[R | None], start: Callable[[int, R], Coroutine[Any, Any, T]], size: int):
        self._rows = rows
        self._start = start
        self.size = max(1, size)
        self.open = 0
        """Rows started, not finished and not waiting for earlier rows."""
        self.started = 0
        self.most_alive = 0
        """The most row tasks alive at once so far."""
        self._live: dict[int, asyncio.Task[T]] = {}
        self._kept: dict[int, T | BaseException] = {}
        self._closed = False
        self._finished: asyncio.Future[None] | None = None

    async def run(self) -> None:
        """Start every row and wait for all of them. Cancelled, it starts no more rows, cancels
        the open ones and waits for them to unwind."""
        self._finished = asyncio.get_running_loop().create_future()
        self._fill()
        try:
            await self._finished
        except asyncio.CancelledError:
            self._closed = True
            live = list(self._live.values())
            for task in live:
                task.cancel()
            if live:
                await asyncio.wait(live)
            raise

    @contextlib.asynccontextmanager
    async def waiting(self, turn: contextlib.AbstractAsyncContextManager[None]) -> AsyncIterator[None]:
        """Enter `turn`, a wait for earlier rows, without counting as open while waiting."""
        self.open -= 1
        self._fill()
        back = False
        try:
            async with turn:
                self.open += 1
                back = True
                yield
        finally:
            if not back:
                self.open += 1

    def outcome(self, position: int) -> T | BaseException | None:
        """What the row's task ended with when that was not None: its result or its failure
        (cancelled: the CancelledError); None for a row that did not end (or ended with None)."""
        if position in self._kept:
            return self._kept[position]
        task = self._live.get(position)
        if task is None or not task.done():
            return None
        if task.cancelled():
            return asyncio.CancelledError()
        return task.exception() or task.result()

    def _fill(self) -> None:
        while self.open < self.size and self.started < len(self._rows) and not self._closed:
            position = self.started
            self.started += 1
            row = self._rows[position]
            assert row is not None, "a row is let go only after it started"
            task = asyncio.create_task(self._start(position, row))
            self._live[position] = task
            self.open += 1
            task.add_done_callback(partial(self._done, position))
        self.most_alive = max(self.most_alive, len(self._live))
        ended = self._closed or self.started == len(self._rows)
        if ended and not self._live and self._finished is not None and not self._finished.done():
            self._finished.set_result(None)

    def _done(self, position: int, task: asyncio.Task[T]) -> None:
        del self._live[position]
        self.open -= 1
        if not task.cancelled():
            if (failure := task.exception()) is not None:
                self._kept[position] = failure
            elif (result := task.result()) is not None:
                self._kept[position] = result
        self._fill()
