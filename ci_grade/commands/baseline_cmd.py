"""`ci-grade baseline save`: store a run's per-test scores as the baseline to compare with."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_PATH = ".ci-grade/baseline.json"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("baseline", help="save a baseline from a results file", description=__doc__)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    save = actions.add_parser("save", help="save RESULTS (a results JSON, baseline file or git:REF:PATH) as a baseline", description=__doc__)
    save.add_argument("results", metavar="RESULTS", help="results JSON from `ci-grade eval -o` (or promptfoo's own), a baseline, or git:REF:PATH")
    save.add_argument("-o", "--output", default=DEFAULT_PATH, metavar="PATH", help=f"where to write the baseline (default {DEFAULT_PATH})")
    save.set_defaults(handler=main)
    parser.set_defaults(handler=lambda _args: _missing_action(parser))


def _missing_action(parser: argparse.ArgumentParser) -> int:
    import sys

    from ci_grade.errors import ExitCode

    parser.print_usage(sys.stderr)
    return ExitCode.USAGE


def main(args: argparse.Namespace) -> int:
    from ci_grade.errors import ExitCode, UsageError
    from ci_grade.gate.store import load_baseline, save_baseline

    baseline = load_baseline(args.results, Path.cwd())
    if baseline is None:
        raise UsageError(f"{args.results} does not exist")
    save_baseline(baseline, Path(args.output))
    print(f"saved a baseline of {len(baseline.tests)} tests to {args.output}")
    return ExitCode.OK
