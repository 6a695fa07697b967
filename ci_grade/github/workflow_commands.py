"""Workflow commands (`::name key=value::message`) printed to stdout for the Actions runner.

Every value is escaped so untrusted text (model outputs, grader reasons) can neither end a
command early nor start a new one, and annotations are capped at GitHub's per-step limit
(10 errors, 10 warnings, 10 notices); what exceeds the cap is still printed as a plain log line.
"""

from __future__ import annotations

import secrets
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, TextIO

from ci_grade import redact
from ci_grade.safe_text import terminal

Level = Literal["error", "warning", "notice"]

ANNOTATION_LIMIT = 10


def escape_data(text: str) -> str:
    """Escape a command's message: `%`, CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: as a message, plus `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_command(name: str, message: str = "", **properties: str | int | None) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None and value != "")
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


class WorkflowCommands:
    """Writes workflow commands (flushed at once, so they interleave correctly with stderr)."""

    def __init__(self, stream: TextIO | None = None, limit: int = ANNOTATION_LIMIT):
        self._stream = stream
        self.limit = limit
        self.emitted: Counter[str] = Counter()
        self._stopped_by: str | None = None

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stdout

    def line(self, text: str) -> None:
        """Print a log line, secrets masked and control characters shown as escapes (so none can
        colour or rewrite the log)."""
        self._write(terminal(redact.text(text)))

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def command(self, name: str, message: str = "", **properties: str | int | None) -> None:
        """Print a command; its text is masked first (but for add-mask, which names the secret)."""
        if name == "add-mask":
            self._write(format_command(name, message, **properties))
            return
        message = redact.text(message)
        properties = {key: redact.text(value) if isinstance(value, str) else value for key, value in properties.items()}
        self._write(terminal(format_command(name, message, **properties)))

    def add_mask(self, value: str) -> None:
        """Ask the runner to mask `value` (each line separately, as the runner masks per line).
        While commands are stopped, they are resumed for it: the runner must act on it."""
        parts = sorted(part for part in {value, *value.splitlines()} if part.strip())
        if not parts:
            return
        token = self._stopped_by
        if token is not None:
            self.line(f"::{token}::")
        for part in parts:
            self.command("add-mask", part)
        if token is not None:
            self._stop()

    def remaining(self, level: Level) -> int:
        return max(0, self.limit - self.emitted[level])

    def annotate(self, level: Level, message: str, *, file: str | None = None, line: int | None = None, title: str | None = None) -> bool:
        """An annotation, or a plain log line once the step's cap for `level` is reached."""
        if self.remaining(level) == 0:
            where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
            self.line(f"{level}: {where}{title + ': ' if title else ''}{' '.join(message.split())}")
            return False
        self.emitted[level] += 1
        self.command(level, message, file=file, line=line if file else None, title=title)
        return True

    def warning(self, message: str, *, title: str | None = None) -> bool:
        return self.annotate("warning", message, title=title)

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A collapsible section of the log."""
        self.command("group", title)
        try:
            yield
        finally:
            self.command("endgroup")

    @contextmanager
    def commands_stopped(self) -> Iterator[None]:
        """Disable command processing while untrusted text is printed (resumed with a random token)."""
        sys.stderr.flush()
        self._stop()
        try:
            yield
        finally:
            sys.stderr.flush()
            self.line(f"::{self._stopped_by}::")
            self._stopped_by = None

    @contextmanager
    def commands_resumed(self) -> Iterator[None]:
        """Act on commands again inside a stopped stretch (our own warnings), then stop them anew."""
        token = self._stopped_by
        if token is not None:
            self.line(f"::{token}::")
            self._stopped_by = None
        try:
            yield
        finally:
            if token is not None:
                self._stop()

    def _stop(self) -> None:
        self._stopped_by = secrets.token_hex(16)
        self.command("stop-commands", self._stopped_by)
