"""Every exception ci-grade raises, in one tree, and the exit code each one ends a process with.

    CiGradeError                      base of everything below; `exit_code` says how the CLI ends
    ├── UsageError                    bad command line or action input (exit 2)
    │   └── ConfigError               a mistake in a config, results or baseline file: file, key path, line (exit 2)
    ├── InfrastructureError           the run could not complete: I/O, git, an internal limit (exit 3)
    │   └── GitHubError               the GitHub API refused or failed (reported, never changes the verdict)
    ├── Interrupted                   SIGINT/SIGTERM: partial results were written (exit 130 / 143)
    └── EvaluationError               a failure confined to one row or one assertion: it becomes an ERROR
        │                             result for that row, never an exit of the process
        ├── ProviderError             a model or API call failed for good
        │   ├── TransientError        worth retrying (429, 5xx, timeouts, resets, malformed 200 replies)
        │   ├── UnknownProviderError  no provider family serves this id
        │   ├── BudgetExhausted       the call was not made: the run's spending limit (--max-cost) is reached
        │   └── NotSupportedError     the provider does not offer this kind of call (text, embedding, ...)
        ├── TemplateError             a nunjucks template could not be parsed or rendered
        ├── ScriptError               user JavaScript or Python raised, or returned nothing usable
        │   └── ScriptAborted         user code stopped from outside: a time or memory limit, or its worker died
        ├── TransformError            an output transform failed or returned nothing
        ├── InputRejected             an output a check refuses to process (a DTD, a non-statement, bad vectors)
        └── GraderError               an assertion could not be graded; carries the grader usage spent so far
            └── VerdictError          a grader reply holds no usable verdict; `problem` says why (VerdictProblem)

`exit_code_of` is the one place that maps an exception to an exit code.
"""

from __future__ import annotations

import signal
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ci_grade.results.usage import TokenUsage


class ExitCode(IntEnum):
    """Process exit codes, documented in the README."""

    OK = 0
    GATE_FAILED = 1
    USAGE = 2
    INFRASTRUCTURE = 3
    INTERRUPTED = 130  # 128 + SIGINT, as shells report it
    TERMINATED = 143  # 128 + SIGTERM


class CiGradeError(Exception):
    """Base class: shown to the user as one line, without a traceback."""

    exit_code: ExitCode = ExitCode.INFRASTRUCTURE


class UsageError(CiGradeError):
    """Bad command-line usage or action input."""

    exit_code = ExitCode.USAGE


class Place(Protocol):
    """Where something was written (a config `Location`)."""

    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int | None: ...


class ConfigError(UsageError):
    """A mistake in the user's files: names the file, the key path and, where known, the line."""

    @classmethod
    def at(cls, message: str, place: Place | None, path: str | None = None) -> ConfigError:
        """The error for something written at `place` (None: not from a file) under the key `path`."""
        return cls(message, file=place.file if place else None, line=place.line if place else None, path=path)

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


class InfrastructureError(CiGradeError):
    """The run could not complete (I/O, git, an unreachable service outside a single test)."""

    exit_code = ExitCode.INFRASTRUCTURE


class GitHubError(InfrastructureError):
    """The GitHub API could not be read or written (permissions, network, GitHub's errors)."""

    def __init__(self, message: str, status: int | None = None, *, rate_limited: bool = False):
        super().__init__(message)
        self.status = status
        self.rate_limited = rate_limited

    @property
    def forbidden(self) -> bool:
        """Refused for who the token is or what it may do (not for a rate limit)."""
        return self.status in (401, 403, 404) and not self.rate_limited


class Interrupted(CiGradeError):
    """The process was asked to stop (SIGINT or SIGTERM); what finished was kept."""

    def __init__(self, signum: int, before_run: str | None = None):
        self.signum = signum
        self.before_run = before_run
        """Set when the signal came before any row ran: what was being done (nothing to write)."""
        super().__init__(f"stopped by {signal.Signals(signum).name}" + (f" {before_run}" if before_run else ""))

    @property
    def exit_code(self) -> ExitCode:  # type: ignore[override]
        return ExitCode.TERMINATED if self.signum == signal.SIGTERM else ExitCode.INTERRUPTED


class EvaluationError(CiGradeError):
    """A failure confined to one row or one assertion; recorded as an ERROR result."""


class ProviderError(EvaluationError):
    """A provider call failed for good, with a message fit for a report."""


class TransientError(ProviderError):
    """A failure worth retrying; carries the server's requested wait and the HTTP status, if any."""

    def __init__(self, message: str, retry_after: float | None = None, *, timeout: bool = False, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.timeout = timeout
        self.status = status


class EndpointDown(ProviderError):
    """An endpoint failed to answer too many times in a row: its calls fail at once for the rest of the run."""


class UnknownProviderError(ProviderError):
    """No provider family serves this id."""


class BudgetExhausted(ProviderError):
    """The call was not made: what it may cost does not fit in what is left of the run's budget."""


class NotSupportedError(ProviderError):
    """The provider does not offer this kind of call."""


class TemplateError(EvaluationError):
    """A template could not be parsed or rendered."""


class ScriptError(EvaluationError):
    """User code (JavaScript or Python) failed or returned nothing usable."""


class ScriptAborted(ScriptError):
    """User code did not finish: it hit a time or memory limit, or the worker process running it
    exited or was killed. Always an ERROR (an assertion that merely raised is a FAIL)."""


class TransformError(EvaluationError):
    """A transform failed or returned nothing."""


class InputRejected(EvaluationError):
    """A check refuses to process this input (e.g. XML with a DTD, SQL that is not a statement)."""


class GraderError(EvaluationError):
    """The assertion could not be graded (grader unreachable, reply unusable, input missing).

    The engine records it as an ERROR for this assertion: never a pass, never inverted. It carries
    what the grader calls cost before the failure, so accounting stays complete.
    """

    def __init__(
        self,
        reason: str,
        *,
        token_usage: TokenUsage | None = None,
        cost: float | None = None,
        grader: str | None = None,
        metadata: dict[str, Any] | None = None,
    ):
        super().__init__(reason)
        self.reason = reason
        self.token_usage = token_usage
        self.cost = cost
        self.grader = grader
        self.metadata = metadata or {}


class VerdictProblem(Enum):
    """Why a grader reply could not be read."""

    EMPTY = "empty"
    """The reply is empty."""
    MISSING = "missing"
    """No verdict carrying the expected field."""
    INVALID = "invalid"
    """A verdict field holds a value that means nothing (a `pass` of "maybe", a score out of range)."""
    CONFLICTING = "conflicting"
    """Several verdicts that disagree."""
    AMBIGUOUS = "ambiguous"
    """A verdict plus verdict-like text outside it that says something else (echoed or injected)."""


class VerdictError(GraderError):
    """The reply holds no usable verdict, or contradicts itself."""

    def __init__(self, reason: str, problem: VerdictProblem = VerdictProblem.MISSING):
        super().__init__(reason)
        self.problem = problem


def exit_code_of(exc: BaseException) -> ExitCode:
    """The exit code a process ends with when `exc` reaches the top."""
    if isinstance(exc, CiGradeError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.INFRASTRUCTURE
