"""`ci-grade compare`: judge a results file against a baseline, write the reports, gate."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare a results file with a baseline and gate",
        description="Judge a results file against a baseline, write the reports, and exit per the gate.",
    )
    parser.add_argument("results", metavar="RESULTS", help="results JSON from `ci-grade eval -o` (or promptfoo's own)")
    parser.add_argument("-o", "--output", action="append", default=[], metavar="PATH", help="write .md (report), .html (report to browse), .junit.xml/.xml (JUnit with regressions), .json (the comparison); repeatable")
    from ci_grade.commands.shared import add_gate_arguments

    add_gate_arguments(parser)
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from ci_grade.commands.shared import gate_policy, read_baseline
    from ci_grade.errors import ExitCode
    from ci_grade.gate.compare import compare
    from ci_grade.report.document import Document, Part
    from ci_grade.report.formats import REPORTS, check_outputs, write_files
    from ci_grade.report.gate_summary import terminal_summary
    from ci_grade.results.promptfoo import read_results

    check_outputs(args.output, REPORTS)
    policy = gate_policy(args)
    baseline, missing = read_baseline(args.baseline, Path.cwd())
    run = read_results(args.results)
    comparison = compare(run, baseline, policy)
    comparison.baseline_missing = missing
    doc = Document([Part(run.info.config_name, run, comparison)], title=args.title, gate_report=True)
    written = write_files(args.output, doc, formats=REPORTS)
    print(terminal_summary(comparison))
    for path in written:
        print(f"  wrote {path}")
    return ExitCode.GATE_FAILED if comparison.gate_failed else ExitCode.OK
