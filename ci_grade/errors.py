"""Exit codes and the user-facing error types that map onto them."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, documented in the README."""

    OK = 0
    GATE_FAILED = 1
    USAGE = 2
    INFRASTRUCTURE = 3


class CiGradeError(Exception):
    """Base class for errors shown to the user as one line, without a traceback."""

    exit_code: ExitCode = ExitCode.INFRASTRUCTURE


class ConfigError(CiGradeError):
    """A mistake in the user's config: names the file, the key path and, where known, the line."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None, line: int | None = None):
        self.message = message
        self.file = file
        self.path = path
        self.line = line
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "")
        if self.path:
            where = f"{where} {self.path}" if where else self.path
        return f"{where}: {self.message}" if where else self.message


class UsageError(CiGradeError):
    """Bad command-line usage."""

    exit_code = ExitCode.USAGE


class InfrastructureError(CiGradeError):
    """The run could not complete (I/O, git, an unreachable service outside a single test)."""

    exit_code = ExitCode.INFRASTRUCTURE
