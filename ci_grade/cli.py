"""`ci-grade` command line. Heavy modules are imported inside commands so `--version` is instant.

Exit codes: 0 every test passed; 1 a test failed or errored (the gate); 2 usage or config
error; 3 the run could not complete (infrastructure); 130 / 143 stopped by SIGINT / SIGTERM
(after writing every report).
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from collections.abc import Sequence
from typing import NoReturn

from ci_grade import __version__
from ci_grade.errors import CiGradeError, ExitCode, Interrupted, exit_code_of

# Each command module offers `add_parser(subparsers)` and `main(args) -> int`.
COMMANDS = ("ci_grade.commands.eval_cmd", "ci_grade.commands.compare_cmd", "ci_grade.commands.baseline_cmd", "ci_grade.commands.merge_cmd", "ci_grade.commands.action_cmd")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors exit 2 with one line
        sys.stderr.write(f"ci-grade: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(ExitCode.USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ci-grade", description="LLM evaluation gate for pull requests (promptfoo-compatible configs).")
    parser.add_argument("--version", action="version", version=f"ci-grade {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    from ci_grade import redact

    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")  # text a sink missed never ends the run
    with redact.use(redact.Redactor.from_env()):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command's exit code; errors are one line on stderr, secrets masked."""
    from ci_grade import redact
    from ci_grade.safe_text import terminal

    verbose = bool(getattr(args, "verbose", False))
    try:
        return int(args.handler(args))
    except Interrupted as exc:
        if exc.before_run:
            sys.stderr.write(f"ci-grade: {exc}\n")
        else:
            sys.stderr.write(f"ci-grade: {exc}: unfinished rows were recorded as errors (cancelled) and every report was written\n")
        return int(exit_code_of(exc))
    except CiGradeError as exc:
        sys.stderr.write(f"ci-grade: error: {terminal(redact.text(str(exc)))}\n")
        return int(exit_code_of(exc))
    except KeyboardInterrupt as exc:
        sys.stderr.write("ci-grade: interrupted\n")
        return int(exit_code_of(exc))
    except Exception as exc:
        if verbose:
            import traceback

            sys.stderr.write(redact.text(traceback.format_exc()))
        sys.stderr.write(f"ci-grade: internal error: {type(exc).__name__}: {terminal(redact.text(str(exc)))} (rerun with --verbose for details)\n")
        return int(exit_code_of(exc))


if __name__ == "__main__":
    raise SystemExit(main())
