"""Stopping a run early: SIGINT / SIGTERM, and the run's time limit (`--max-duration`).

A command makes one `Stop` and holds `catching_signals()` around everything it does. The first
SIGINT or SIGTERM asks the run to stop; a second one ends the process at once (the default
action). The runner (`runner.py`) waits for its rows through `Stop.wait`: when a stop is asked for or
the time limit passes, rows still running or waiting are cancelled and recorded as ERROR rows
that say why ("cancelled: ..." or "timed out: ..."), and the command goes on to write every
report. A signalled run then exits 130 (SIGINT) or 143 (SIGTERM); a run cut by its time limit is
judged by the gate like any run with errored rows.

Before any row runs there is nothing to keep: while the config is loaded and the plan built
(`Stop.at_once`), the first signal ends that work where it stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

from ci_grade.errors import Interrupted

# How long cancelled rows get to unwind (close connections, kill child processes) before the
# run goes on without them.
CANCEL_GRACE_SECONDS = 5.0
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_duration(text: str) -> float:
    """Seconds from `90`, `90s`, `30m`, `1h30m`, `1.5h`; a ValueError says what is wrong."""
    value = text.strip().lower()
    try:
        seconds = float(value)
    except ValueError:
        match = _DURATION.fullmatch(value)
        if not value or match is None:
            raise ValueError(f"expected a duration such as 90s, 30m or 1h30m, got {text!r}") from None
        hours, minutes, secs = (float(part) if part else 0.0 for part in match.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"expected a duration above zero, got {text!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """`1h30m`, `5m`, `2m30s`, `45s`, `0.5s`."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)


class Stop:
    """Whether, and why, the run should stop before every row is done."""

    def __init__(self, max_duration: float | None = None):
        self.started = time.monotonic()
        self.max_duration = max_duration
        self.reason: str | None = None
        self.signum: int | None = None
        self._wake: Callable[[], None] | None = None
        self._at_once = False

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Ask the run to stop (the first reason counts); safe to call from a signal handler."""
        if self.reason is None:
            self.reason = reason
        if self._wake is not None:
            self._wake()

    def _time_limit(self) -> None:
        assert self.max_duration is not None
        self.request(f"timed out: the run reached its time limit of {format_duration(self.max_duration)}")

    async def wait(self, tasks: Sequence[asyncio.Task[Any]]) -> bool:
        """Wait until every task is done (True), or a stop is asked for or the time limit passes:
        then the unfinished tasks are cancelled, given a moment to unwind, and False returned."""
        loop = asyncio.get_running_loop()
        stopped: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not stopped.done():
                stopped.set_result(None)

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(settle)

        timer = None
        if self.max_duration is not None:
            timer = loop.call_later(max(0.0, self.started + self.max_duration - time.monotonic()), self._time_limit)
        self._wake = wake
        if self.requested:
            settle()
        everything = asyncio.gather(*tasks, return_exceptions=True)
        waiters: list[asyncio.Future[Any]] = [everything, stopped]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._wake = None
            if timer is not None:
                timer.cancel()
        if everything.done():
            return True
        for task in tasks:
            task.cancel()
        await asyncio.wait([everything], timeout=CANCEL_GRACE_SECONDS)
        return False

    @contextlib.contextmanager
    def catching_signals(self) -> Iterator[Stop]:
        """Handle SIGINT and SIGTERM as stop requests while the block runs (main thread only;
        a signal the process was started ignoring stays ignored)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        current = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        previous = {sig: handler for sig, handler in current.items() if handler is not None and handler is not signal.SIG_IGN}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        def handle(signum: int, frame: FrameType | None) -> None:
            if self.signum is not None:  # the second signal: stop at once
                restore()
                signal.raise_signal(signum)
                return
            self.signum = signum
            self.request(f"cancelled: stopped by {signal.Signals(signum).name}")
            if self._at_once:
                raise _StopNow(signum)

        for sig in previous:
            signal.signal(sig, handle)
        try:
            yield self
        finally:
            restore()

    @contextlib.contextmanager
    def at_once(self, doing: str) -> Iterator[None]:
        """While the block runs (`doing` it, before any row), a signal ends it at once with
        `Interrupted`; a signal that came before the block ends it before it starts."""
        try:
            if self.signum is not None:
                raise _StopNow(self.signum)
            self._at_once = True
            try:
                yield
            finally:
                self._at_once = False
        except _StopNow as stopped:
            raise Interrupted(stopped.signum, f"while {doing}: nothing was run") from None


class _StopNow(BaseException):
    """Raised by the signal handler inside `Stop.at_once`: a BaseException, so that no
    `except Exception` in the code it interrupts can swallow it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
