"""`ci-grade baseline save`: store a run's per-test scores and outputs (or several runs') as the baseline
to compare with, with the summaries of the last runs saved there before (the report's trend)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_PATH = ".ci-grade/baseline.json"


def add_parser(subparsers: Any) -> None:
    from ci_grade.commands.shared import add_history_argument

    parser = subparsers.add_parser("baseline", help="save a baseline from a results file", description=__doc__)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    save = actions.add_parser("save", help="save RESULTS (results JSONs, a baseline file or git:REF:PATH) as a baseline", description=__doc__)
    save.add_argument("results", metavar="RESULTS", nargs="+", help="results JSON from `ci-grade eval -o` (or promptfoo's own), a baseline, or git:REF:PATH; several results of one config (e.g. the last runs of main) become one baseline holding each run as a repeat")
    save.add_argument("-o", "--output", default=DEFAULT_PATH, metavar="PATH", help=f"where to write the baseline (default {DEFAULT_PATH}); the history of a baseline already there is carried")
    add_history_argument(save)
    save.set_defaults(handler=main)
    parser.set_defaults(handler=lambda _args: _missing_action(parser))


def _missing_action(parser: argparse.ArgumentParser) -> int:
    import sys

    from ci_grade.errors import ExitCode

    parser.print_usage(sys.stderr)
    return ExitCode.USAGE


def main(args: argparse.Namespace) -> int:
    from ci_grade.errors import ExitCode
    from ci_grade.gate.store import baseline_from_sources, save_baseline

    baseline = baseline_from_sources(args.results, Path.cwd())
    save_baseline(baseline, Path(args.output), args.history)
    runs = f" from {baseline.runs} runs" if baseline.runs > 1 else ""
    print(f"saved a baseline of {len(baseline.tests)} tests{runs} to {args.output}")
    return ExitCode.OK
